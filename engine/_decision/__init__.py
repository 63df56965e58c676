"""The decision core: options, the schema language, the menu, reply extraction and validation.

Plain synchronous functions without I/O, testable without an event loop: the option forms
are normalised into :class:`Option` records, parameters into specs, the menu is rendered and
compiled to JSON Schema choices (and to one enforced-pick schema), a reply's pick is found and
validated against the menu. ``docs/decisions.md`` is these rules as a user reads them.
"""

from engine._decision._describe import asked_prompt, describe_menu, example_pick
from engine._decision._enforce import PICK_KEY, pick_schemas, tool_parameters
from engine._decision._extract import RawPick, extract_action, find_pick
from engine._decision._menu import Menu, build_menu, choice_schema, render_options
from engine._decision._options import Option
from engine._decision._params import AGENTIC_ATTR, return_annotation
from engine._decision._picks import plain_args
from engine._decision._prompts import DECISION_FINISH_INSTRUCTION, repick_text
from engine._decision._validate import Failure, Pick, bind, validate

__all__ = [
    "AGENTIC_ATTR",
    "DECISION_FINISH_INSTRUCTION",
    "PICK_KEY",
    "Failure",
    "Menu",
    "Option",
    "Pick",
    "RawPick",
    "asked_prompt",
    "bind",
    "build_menu",
    "choice_schema",
    "describe_menu",
    "example_pick",
    "extract_action",
    "find_pick",
    "pick_schemas",
    "plain_args",
    "render_options",
    "repick_text",
    "return_annotation",
    "tool_parameters",
    "validate",
]
