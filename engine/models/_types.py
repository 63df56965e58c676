"""What crosses the model seam: requests, replies and the :class:`Model` protocol."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "ChoiceSpec",
    "ContentBlock",
    "ImageBlock",
    "Message",
    "Model",
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
        return cls.model_construct(
            role=role,
            content=[TextBlock.model_construct(type="text", text=text)],
            tool_calls=[],
            tool_call_id=None,
            name=None,
        )


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


class Request(BaseModel):
    """One call to a model."""

    messages: list[Message]
    tools: list[ToolSpec] | None = None
    response_format: dict[str, Any] | None = None
    model: str | None = None
    choices: list[ChoiceSpec] | None = None
    max_tokens: int | None = None


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

    async def complete(self, request: Request) -> Response:
        """Answer one request."""
        ...
