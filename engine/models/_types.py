"""What crosses the model seam: requests, replies and the :class:`Model` protocol."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from engine.models._settings import ModelSettings

__all__ = [
    "ChoiceSpec",
    "ContentBlock",
    "ImageBlock",
    "Message",
    "Model",
    "PickSchema",
    "Request",
    "Response",
    "TextBlock",
    "ToolCall",
    "ToolSpec",
    "Usage",
]


class TextBlock(BaseModel):
    """A block of text."""

    model_config = ConfigDict(frozen=True)
    type: Literal["text"] = "text"
    text: str

    @classmethod
    def trusted(cls, text: str) -> TextBlock:
        """Build a block of a ``str`` the engine made, without validating it again."""
        return _trusted(cls, {"type": "text", "text": text}, {"text"})


class ImageBlock(BaseModel):
    """An image, by URL or as base64 data with its media type."""

    model_config = ConfigDict(frozen=True)
    type: Literal["image"] = "image"
    url: str | None = None
    data: str | None = None
    media_type: str | None = None


ContentBlock = Annotated[TextBlock | ImageBlock, Field(discriminator="type")]


class ToolCall(BaseModel):
    """A native tool call the model asked for."""

    id: str
    name: str
    arguments: dict[str, Any] | str = Field(default_factory=dict)


class Message(BaseModel):
    """One message of a conversation."""

    role: Literal["system", "user", "assistant", "tool"]
    content: list[ContentBlock] = Field(default_factory=list)
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None

    @property
    def text(self) -> str:
        """The message's text content, its text blocks joined."""
        return "".join(b.text for b in self.content if isinstance(b, TextBlock))

    @classmethod
    def of(cls, role: Literal["system", "user", "assistant", "tool"], text: str) -> Message:
        """Build a message holding one text block, without re-validating it."""
        return cls.trusted(role, [TextBlock.trusted(text)])

    @classmethod
    def trusted(
        cls,
        role: Literal["system", "user", "assistant", "tool"],
        content: list[TextBlock | ImageBlock],
    ) -> Message:
        """Build a message of content blocks that are already valid, without validating again."""
        message = _new(cls)  # what _trusted does, in this frame: messages are made per call
        _set_dict(
            message,
            {
                "role": role,
                "content": content,
                "tool_calls": [],
                "tool_call_id": None,
                "name": None,
            },
        )
        _set_fields(message, {"role", "content"})
        _set_extra(message, None)
        _set_private(message, None)
        return message


class ToolSpec(BaseModel):
    """A native tool offered to the model: its name, description and JSON Schema."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object"})


class ChoiceSpec(BaseModel):
    """One option of the menu a decision offers, passed to the model beside the text.

    Models that can constrain their output (or simulate a pick) read the menu from here
    instead of scraping it from the prompt.
    """

    name: str
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object"})


class PickSchema(BaseModel):
    """The menu as one JSON Schema, for a provider that can constrain its reply to it.

    The schema is an object whose one property, :attr:`key`, holds the pick
    (``{"call": ..., "args": {...}}``, one branch per option). A provider that enforces it
    returns the pick itself, the value under :attr:`key`, as JSON text in
    :attr:`Response.text`, so the decision core parses it as it parses any reply.
    """

    model_config = ConfigDict(frozen=True)
    name: str = "pick"
    key: str = "pick"
    json_schema: dict[str, Any]
    #: The same schema in OpenAI's strict subset, or ``None`` when the menu has no strict form.
    strict_schema: dict[str, Any] | None = None


class Request(BaseModel):
    """One call to a model.

    ``choices`` carries the menu of a decision beside its text. ``enforce``, when set, asks
    the provider to constrain the reply to the menu's schema; a model that cannot ignores
    it, and the reply is parsed from text as usual. ``settings`` are the runtime's and the
    call's :class:`ModelSettings`, merged; a model lays them over its own. ``max_tokens`` is
    the bound the engine asks for when no settings level sets one (decisions get
    :data:`~engine.models.DECISION_MAX_TOKENS`); :func:`~engine.models.effective_settings`
    says what a model sends.
    """

    messages: list[Message]
    tools: list[ToolSpec] | None = None
    response_format: dict[str, Any] | None = None
    model: str | None = None
    choices: list[ChoiceSpec] | None = None
    max_tokens: int | None = None
    enforce: PickSchema | None = None
    settings: ModelSettings | None = None

    @classmethod
    def trusted(
        cls,
        messages: list[Message],
        *,
        tools: list[ToolSpec] | None = None,
        response_format: dict[str, Any] | None = None,
        choices: list[ChoiceSpec] | None = None,
        max_tokens: int | None = None,
        settings: ModelSettings | None = None,
    ) -> Request:
        """Build a request of parts that are already valid, without validating them again."""
        given = _REQUEST_GIVEN[max_tokens is not None, settings is not None]
        request = _new(cls)  # what _trusted does, in this frame: requests are made per call
        _set_dict(
            request,
            {
                "messages": messages,
                "tools": tools,
                "response_format": response_format,
                "model": None,
                "choices": choices,
                "max_tokens": max_tokens,
                "enforce": None,
                "settings": settings,
            },
        )
        _set_fields(request, set(given))
        _set_extra(request, None)
        _set_private(request, None)
        return request


class Usage(BaseModel):
    """Token usage of one model call."""

    input_tokens: int = 0
    output_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        """Input and output tokens together."""
        return self.input_tokens + self.output_tokens


class Response(BaseModel):
    """What a model answered."""

    text: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    finish_reason: str | None = None
    usage: Usage = Field(default_factory=Usage)
    model: str | None = None
    latency_s: float | None = None
    #: How the provider was asked to constrain the reply to the request's ``enforce`` schema
    #: (``"json_schema"``, ``"json_object"``, ``"tool"``, or ``"text"`` for not at all);
    #: ``None`` when the request asked for no enforcement or the model does not say.
    enforcement: str | None = None

    @property
    def truncated(self) -> bool:
        """Whether the provider reports the reply was cut off by a length limit."""
        return self.finish_reason in ("length", "max_tokens")


@runtime_checkable
class Model(Protocol):
    """The protocol every provider implements: one async call, a request in, a reply out.

    Implementations translate their vendor's exceptions into :mod:`engine` errors
    (``RateLimitError``, ``ProviderUnavailableError``, ...) so none escapes the package.
    """

    name: str

    # A provider that can constrain a reply to a menu also says how, as a class or instance
    # attribute ``enforcement``: ``"json_schema"``, ``"json_object"``, ``"tool"`` or
    # ``"auto"`` (it finds out per server). The runtime reads it with a default of ``None``
    # (text parsing), so it is not part of the protocol; a model that has one sets
    # ``Response.enforcement`` to the form it sent.

    async def complete(self, request: Request) -> Response:
        """Answer one request."""
        ...


# -- construction without validation, for values the engine itself built ----------------------
#
# A validating constructor checks every field again, nested models included; on the hot path
# of a decision the engine builds these objects from values it already knows are valid. This
# is what ``model_construct`` does, without its per-field bookkeeping.

_M = TypeVar("_M", bound=BaseModel)
_new = object.__new__  # BaseModel defines no __new__ of its own
# The setters of BaseModel's slots, called directly: what object.__setattr__ finds for these
# names (skipping the model's own __setattr__), without looking them up each time.
_SLOTS = vars(BaseModel)
_set_dict = _SLOTS["__dict__"].__set__
_set_fields = _SLOTS["__pydantic_fields_set__"].__set__
_set_extra = _SLOTS["__pydantic_extra__"].__set__
_set_private = _SLOTS["__pydantic_private__"].__set__


# The fields a trusted request or reply marks as given. Its set is copied from one of these:
# CPython sizes a copy for what it holds (five names: a table of 16 slots, 0.25 KB less than
# the same names added one by one take), and requests and replies are made on every call.
_REQUEST_FIELDS = frozenset({"messages", "tools", "response_format", "choices"})
_REQUEST_GIVEN = {
    (False, False): _REQUEST_FIELDS,
    (True, False): _REQUEST_FIELDS | {"max_tokens"},
    (False, True): _REQUEST_FIELDS | {"settings"},
    (True, True): _REQUEST_FIELDS | {"max_tokens", "settings"},
}
_RESPONSE_GIVEN = frozenset({"text", "finish_reason", "usage", "model", "latency_s"})


def _trusted(cls: type[_M], values: dict[str, Any], fields_set: set[str]) -> _M:
    """Build ``cls`` from ``values`` (every field given) without validating them."""
    obj = _new(cls)
    _set_dict(obj, values)
    _set_fields(obj, fields_set)
    _set_extra(obj, None)
    _set_private(obj, None)
    return obj


def trusted_message(
    role: Literal["system", "user", "assistant", "tool"], content: list[TextBlock | ImageBlock]
) -> Message:
    """Build a message of validated content blocks, without validating it again."""
    return Message.trusted(role, content)


def trusted_request(
    messages: list[Message],
    *,
    tools: list[ToolSpec] | None = None,
    response_format: dict[str, Any] | None = None,
    choices: list[ChoiceSpec] | None = None,
    max_tokens: int | None = None,
    settings: ModelSettings | None = None,
) -> Request:
    """Build a request of validated parts, without validating them again."""
    return Request.trusted(
        messages,
        tools=tools,
        response_format=response_format,
        choices=choices,
        max_tokens=max_tokens,
        settings=settings,
    )


def trusted_response(
    text: str,
    *,
    finish_reason: str | None,
    input_tokens: int,
    output_tokens: int,
    model: str | None,
    latency_s: float | None,
) -> Response:
    """Build a reply from values of the right types, without validating them again."""
    usage = _trusted(
        Usage,
        {"input_tokens": input_tokens, "output_tokens": output_tokens},
        {"input_tokens", "output_tokens"},
    )
    values: dict[str, Any] = {
        "text": text,
        "tool_calls": [],
        "finish_reason": finish_reason,
        "usage": usage,
        "model": model,
        "latency_s": latency_s,
        "enforcement": None,
    }
    return _trusted(Response, values, set(_RESPONSE_GIVEN))
