"""Model providers behind one protocol, and the fakes tests and demos run on.

The provider SDKs are optional extras (``pip install -e ".[openai]"``,
``".[anthropic]"``), imported at a model's first call, so this package imports
without them.
"""

from engine.models._anthropic import AnthropicModel
from engine.models._costs import call_cost
from engine.models._openai import OpenAIModel
from engine.models._price import Price, add_cost
from engine.models._registry import model_from_string
from engine.models._scripted import ScriptedModel
from engine.models._settings import DECISION_MAX_TOKENS, ModelSettings, effective_settings
from engine.models._simulated import Faults, SimulatedModel
from engine.models._types import (
    ChoiceSpec,
    ContentBlock,
    ImageBlock,
    Message,
    Model,
    PickSchema,
    Request,
    Response,
    TextBlock,
    ToolCall,
    ToolSpec,
    Usage,
)

__all__ = [
    "DECISION_MAX_TOKENS",
    "AnthropicModel",
    "ChoiceSpec",
    "ContentBlock",
    "Faults",
    "ImageBlock",
    "Message",
    "Model",
    "ModelSettings",
    "OpenAIModel",
    "PickSchema",
    "Price",
    "Request",
    "Response",
    "ScriptedModel",
    "SimulatedModel",
    "TextBlock",
    "ToolCall",
    "ToolSpec",
    "Usage",
    "add_cost",
    "call_cost",
    "effective_settings",
    "model_from_string",
]
