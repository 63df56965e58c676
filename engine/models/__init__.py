"""Model providers behind one protocol, and the fakes tests and demos run on."""

from engine.models._scripted import ScriptedModel
from engine.models._types import (
    ChoiceSpec,
    ContentBlock,
    ImageBlock,
    Message,
    Model,
    Request,
    Response,
    TextBlock,
    ToolCall,
    ToolSpec,
    Usage,
)

__all__ = [
    "ChoiceSpec",
    "ContentBlock",
    "ImageBlock",
    "Message",
    "Model",
    "Request",
    "Response",
    "ScriptedModel",
    "TextBlock",
    "ToolCall",
    "ToolSpec",
    "Usage",
]
