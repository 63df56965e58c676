"""An OpenAI-compatible chat model on the official ``openai`` SDK.

Anything that speaks OpenAI's chat completions protocol works through ``base_url``: the
OpenAI API itself, vLLM, Ollama, the llama.cpp server, LM Studio, and gateways such as
OpenRouter or LiteLLM's proxy. The SDK is imported, and the key read, at the first call, so
``import engine`` works without the ``openai`` extra and without a key.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any, Literal

from engine._base import ModelError
from engine._base import ProviderUnavailableError as _Unavailable
from engine.models._price import Price, check_price
from engine.models._sdk import SDKModel, key_or_none, missing_key
from engine.models._types import (
    ImageBlock,
    Message,
    PickSchema,
    Request,
    Response,
    TextBlock,
    ToolCall,
    Usage,
)
from engine.models._wire import text_of, translate_sdk_error, unwrap_pick

if TYPE_CHECKING:
    from openai import AsyncOpenAI

__all__ = ["OpenAIModel"]

_PROVIDER = "openai"
# Local servers take any key, but the SDK insists on one.
_LOCAL_KEY = "not-needed"


class OpenAIModel(SDKModel):
    """A chat model reached through the OpenAI chat completions protocol.

    Args:
        model: The model id (``"gpt-4o-mini"``, or what a local server calls its model).
        base_url: The server's ``/v1`` URL; ``OPENAI_BASE_URL`` or OpenAI's API by default.
            One that is not an ``http(s)`` URL with a host and a valid port is a
            ``ValueError`` here (from ``OPENAI_BASE_URL``, a ``ModelError`` at the call).
        api_key: The key; ``OPENAI_API_KEY`` by default (an empty one counts as none). A
            server at another ``base_url`` that needs no key gets a placeholder.
        client: A ready ``openai.AsyncOpenAI`` to use instead (its own retries are turned
            off: the engine's transport layer retries).
        enforce: Whether the server honours ``response_format`` ``json_schema``, so picks
            can be constrained to the menu. ``None`` (the default) means yes for OpenAI's
            own API and unknown, so no, for other servers; vLLM, recent Ollama and
            llama.cpp servers take ``True``.
        timeout: Seconds the SDK waits for one HTTP response.
        price: What the model's calls cost (:class:`~engine.Price`, dollars per million
            tokens); ``None`` (the default): the maintained price table's, where it knows the model.

    Vendor exceptions never escape: they become :class:`~engine.RateLimitError` (with the
    ``Retry-After`` wait), :class:`~engine.ProviderUnavailableError`,
    :class:`~engine.ModelTimeoutError`, :class:`~engine.BadRequestError` or
    :class:`~engine.AuthenticationError`.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        client: AsyncOpenAI | None = None,
        enforce: bool | None = None,
        timeout: float = 60.0,
        price: Price | None = None,
    ) -> None:
        super().__init__(model, api_key=api_key, client=client, base_url=base_url, timeout=timeout)
        self._enforce = enforce
        self.price = check_price(price)

    def __repr__(self) -> str:
        where = f", base_url={self.base_url!r}" if self.base_url else ""
        return f"OpenAIModel({self.model!r}{where})"

    @property
    def enforcement(self) -> Literal["json_schema"] | None:
        """``"json_schema"`` when picks may be constrained to the menu, else ``None``."""
        enforce = self._enforce
        if enforce is None:
            enforce = self._official()
        return "json_schema" if enforce else None

    def _official(self) -> bool:
        url = self.base_url or os.environ.get("OPENAI_BASE_URL") or ""
        if self._given is not None:
            url = str(self._given.base_url)
        return not url or "api.openai.com" in url

    async def complete(self, request: Request) -> Response:
        """Answer one request through the chat completions endpoint.

        Raises:
            ModelError: The call failed (translated from the SDK's exception).
        """
        client = self._connect()
        completion, latency = await self._send(
            client.chat.completions.create, self._params(request), _translate
        )
        return _response(completion, request.enforce, latency)

    def _open(self) -> Any:
        try:
            import openai
        except ImportError as exc:
            raise ModelError(
                "OpenAIModel needs the openai SDK: pip install -e '.[openai]'",
                provider=_PROVIDER,
            ) from exc
        base_url = self._endpoint("OPENAI_BASE_URL", _PROVIDER)
        api_key = key_or_none(self._api_key) or key_or_none(os.environ.get("OPENAI_API_KEY"))
        if api_key is None and base_url and "api.openai.com" not in base_url:
            api_key = _LOCAL_KEY
        if api_key is None:
            raise missing_key("OpenAI", "OPENAI_API_KEY")
        return self._build(openai.AsyncOpenAI, _PROVIDER, api_key=api_key, base_url=base_url)

    def _params(self, request: Request) -> dict[str, Any]:
        params: dict[str, Any] = {
            "model": request.model or self.model,
            "messages": [_message(m) for m in request.messages],
        }
        if request.tools:
            params["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.parameters,
                    },
                }
                for t in request.tools
            ]
        if request.max_tokens is not None:
            # OpenAI's newer models only take max_completion_tokens; other servers know
            # max_tokens best.
            key = "max_completion_tokens" if self._official() else "max_tokens"
            params[key] = request.max_tokens
        if request.enforce is not None:
            params["response_format"] = response_format(request.enforce)
        elif request.response_format is not None:
            params["response_format"] = request.response_format
        return params


def response_format(enforce: PickSchema) -> dict[str, Any]:
    """Return the ``response_format`` that constrains a reply to a pick schema."""
    strict = enforce.strict_schema is not None
    schema = enforce.strict_schema if strict else enforce.json_schema
    return {
        "type": "json_schema",
        "json_schema": {"name": enforce.name, "schema": schema, "strict": strict},
    }


def _message(message: Message) -> dict[str, Any]:
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": text_of(message)}
    out: dict[str, Any] = {"role": message.role, "content": _content(message)}
    if message.tool_calls:
        out["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": _arguments_text(call.arguments)},
            }
            for call in message.tool_calls
        ]
        out["content"] = text_of(message) or None
    return out


def _content(message: Message) -> str | list[dict[str, Any]]:
    """Return one text block as a string; a user's several blocks, or an image, as parts."""
    content = message.content
    if len(content) == 1 and isinstance(content[0], TextBlock):
        return content[0].text
    if message.role != "user":
        return text_of(message)
    blocks = [b for b in content if not (isinstance(b, TextBlock) and not b.text)]
    if not blocks or (len(blocks) == 1 and isinstance(blocks[0], TextBlock)):
        return text_of(message)
    return [_part(b) for b in blocks]


def _part(block: TextBlock | ImageBlock) -> dict[str, Any]:
    if isinstance(block, TextBlock):
        return {"type": "text", "text": block.text}
    url = block.url or f"data:{block.media_type or 'image/png'};base64,{block.data}"
    return {"type": "image_url", "image_url": {"url": url}}


def _arguments_text(arguments: dict[str, Any] | str) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)


def _response(completion: Any, enforce: PickSchema | None, latency: float) -> Response:
    choices = getattr(completion, "choices", None)
    if not choices:
        raise _Unavailable("openai answered with no choices", provider=_PROVIDER)
    choice = choices[0]
    message = choice.message
    text = message.content or ""
    if enforce is not None and text:
        text = unwrap_pick(text, enforce) or text
    usage = getattr(completion, "usage", None)
    return Response(
        text=text,
        # Only function calls: the engine offers no other kind of tool.
        tool_calls=[_tool_call(c) for c in message.tool_calls or () if _is_function(c)],
        finish_reason=choice.finish_reason,
        usage=Usage(
            input_tokens=getattr(usage, "prompt_tokens", 0) or 0,
            output_tokens=getattr(usage, "completion_tokens", 0) or 0,
        ),
        model=getattr(completion, "model", None),
        latency_s=latency,
    )


def _is_function(call: Any) -> bool:
    return getattr(call, "function", None) is not None


def _tool_call(call: Any) -> ToolCall:
    function = call.function
    raw = function.arguments or ""
    try:
        arguments = json.loads(raw) if raw else {}
    except ValueError:
        arguments = raw  # kept as sent; the tool loop reports it as bad arguments
    if not isinstance(arguments, dict):
        arguments = raw
    return ToolCall(id=call.id, name=function.name, arguments=arguments)


def _translate(exc: Exception) -> ModelError | None:
    """Return our error for an ``openai`` SDK exception, ``None`` for anything else."""
    import openai

    return translate_sdk_error(exc, openai, openai.OpenAIError, _PROVIDER)
