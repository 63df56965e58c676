"""An Anthropic model on the official ``anthropic`` SDK.

The SDK is imported, and ``ANTHROPIC_API_KEY`` read, at the first call, so ``import engine``
works without the ``anthropic`` extra and without a key. An enforced pick is one forced tool
call whose input is the pick.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any, Literal

from engine._base import ModelError
from engine.models._price import Price, check_price
from engine.models._sdk import SDKModel, key_or_none, missing_key
from engine.models._settings import ModelSettings, effective_settings
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
    from anthropic import AsyncAnthropic

__all__ = ["AnthropicModel"]

_PROVIDER = "anthropic"
# The reply bound of a text turn nothing else bounds: Anthropic's API needs one.
_MAX_TOKENS = 1024


class AnthropicModel(SDKModel):
    """A Claude model reached through Anthropic's messages API.

    Args:
        model: The model id (``"claude-sonnet-4-6"``, ...).
        api_key: The key; ``ANTHROPIC_API_KEY`` by default (an empty one counts as none).
        client: A ready ``anthropic.AsyncAnthropic`` to use instead (its own retries are
            turned off: the engine's transport layer retries).
        max_tokens: The reply's token limit (the API needs one). Given, it is the model's
            own ``max_tokens`` setting (``settings.max_tokens`` wins over it), so it also
            lifts a decision's default bound; otherwise 1024 when nothing else sets one.
        base_url: Another endpoint speaking the same protocol (a proxy, a test server);
            ``ANTHROPIC_BASE_URL`` by default. A malformed one is a ``ValueError`` here.
        timeout: Seconds the SDK waits for one HTTP response.
        settings: The model's :class:`~engine.models.ModelSettings` (a runtime's and a
            call's are laid over them): sent as ``max_tokens`` and ``stop_sequences``, with
            ``temperature``, ``top_p`` and ``extra`` as body fields (recent SDKs no longer
            take the first two as arguments); ``seed`` has no place in Anthropic's API and
            is not sent.
        price: What the model's calls cost (:class:`~engine.Price`, dollars per million
            tokens); ``None`` (the default): the maintained price table's, where it knows the model.

    Vendor exceptions never escape: they become our errors, as in
    :class:`~engine.models.OpenAIModel`.
    """

    enforcement: Literal["tool"] = "tool"

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        client: AsyncAnthropic | None = None,
        max_tokens: int | None = None,
        base_url: str | None = None,
        timeout: float = 60.0,
        settings: ModelSettings | None = None,
        price: Price | None = None,
    ) -> None:
        super().__init__(
            model,
            api_key=api_key,
            client=client,
            base_url=base_url,
            timeout=timeout,
            settings=settings,
        )
        if max_tokens is not None:
            self.settings = ModelSettings(max_tokens=max_tokens).merge(self.settings)
        self.max_tokens = max_tokens if max_tokens is not None else _MAX_TOKENS
        self.price = check_price(price)

    def __repr__(self) -> str:
        return f"AnthropicModel({self.model!r})"

    async def complete(self, request: Request) -> Response:
        """Answer one request through the messages endpoint.

        Raises:
            ModelError: The call failed (translated from the SDK's exception).
        """
        client = self._connect()
        url = str(client.base_url).rstrip("/")
        message, latency = await self._send(
            client.messages.create, self._params(request), lambda exc: _translate(exc, url)
        )
        response = _response(message, request.enforce, latency)
        if request.enforce is not None:
            response.enforcement = "tool"
        return response

    def _open(self) -> Any:
        try:
            import anthropic
        except ImportError as exc:
            raise ModelError(
                "AnthropicModel needs the anthropic SDK: pip install -e '.[anthropic]'",
                provider=_PROVIDER,
            ) from exc
        base_url = self._endpoint("ANTHROPIC_BASE_URL", _PROVIDER)
        api_key = key_or_none(self._api_key) or key_or_none(os.environ.get("ANTHROPIC_API_KEY"))
        if api_key is None:
            raise missing_key("Anthropic", "ANTHROPIC_API_KEY")
        return self._build(anthropic.AsyncAnthropic, _PROVIDER, api_key=api_key, base_url=base_url)

    def _params(self, request: Request) -> dict[str, Any]:
        system = "\n\n".join(text_of(m) for m in request.messages if m.role == "system")
        settings = effective_settings(self.settings, request)
        params: dict[str, Any] = {
            "model": request.model or self.model,
            "max_tokens": settings.max_tokens or self.max_tokens,
            "messages": messages(request.messages),
        }
        if settings.stop is not None:
            params["stop_sequences"] = list(settings.stop)
        # Body fields: recent SDKs no longer take temperature and top_p as arguments (newer
        # models refuse them), but the API still reads them for the models that take them.
        body = {
            name: value
            for name in ("temperature", "top_p")
            if (value := getattr(settings, name)) is not None
        }
        if body or settings.extra:
            params["extra_body"] = {**body, **(settings.extra or {})}
        if system:
            params["system"] = system
        tools = [
            {"name": t.name, "description": t.description, "input_schema": t.parameters}
            for t in request.tools or ()
        ]
        if request.enforce is not None:
            # The pick is the input of one forced tool call. The other tools stay defined
            # (the API wants every tool the conversation used), but none can be called.
            tools.append(_pick_tool(request.enforce))
            params["tool_choice"] = {"type": "tool", "name": request.enforce.name}
        if tools:
            params["tools"] = tools
        return params


def _pick_tool(enforce: PickSchema) -> dict[str, Any]:
    return {
        "name": enforce.name,
        "description": "Record your decision: pick exactly one of the offered options.",
        "input_schema": enforce.json_schema,
    }


def messages(conversation: list[Message]) -> list[dict[str, Any]]:
    """Translate a conversation into Anthropic's alternating user and assistant turns.

    System messages go to the request's ``system`` field; tool results become
    ``tool_result`` blocks of a user turn; consecutive turns of one role are merged.
    """
    out: list[dict[str, Any]] = []
    for message in conversation:
        if message.role == "system":
            continue
        role = "assistant" if message.role == "assistant" else "user"
        blocks = _blocks(message)
        if not blocks:
            continue
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    return out


def _blocks(message: Message) -> list[dict[str, Any]]:
    if message.role == "tool":
        return [
            {
                "type": "tool_result",
                "tool_use_id": message.tool_call_id,
                "content": text_of(message),
            }
        ]
    blocks = [_part(b) for b in message.content if not (isinstance(b, TextBlock) and not b.text)]
    blocks.extend(
        {"type": "tool_use", "id": c.id, "name": c.name, "input": _input(c.arguments)}
        for c in message.tool_calls
    )
    return blocks


def _part(block: TextBlock | ImageBlock) -> dict[str, Any]:
    if isinstance(block, TextBlock):
        return {"type": "text", "text": block.text}
    if block.url:
        return {"type": "image", "source": {"type": "url", "url": block.url}}
    media_type = block.media_type or "image/png"
    return {
        "type": "image",
        "source": {"type": "base64", "media_type": media_type, "data": block.data},
    }


def _input(arguments: dict[str, Any] | str) -> dict[str, Any]:
    if isinstance(arguments, dict):
        return arguments
    try:
        value = json.loads(arguments)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _response(message: Any, enforce: PickSchema | None, latency: float) -> Response:
    texts: list[str] = []
    calls: list[ToolCall] = []
    for block in getattr(message, "content", None) or ():
        kind = getattr(block, "type", None)
        if kind == "text":
            texts.append(block.text)
        elif kind == "tool_use":
            if enforce is not None and block.name == enforce.name:
                # The forced pick: hand it to the decision core as the reply's text.
                texts.append(unwrap_pick(block.input, enforce) or json.dumps(block.input))
            else:
                calls.append(ToolCall(id=block.id, name=block.name, arguments=block.input))
    usage = getattr(message, "usage", None)
    return Response(
        text="".join(texts),
        tool_calls=calls,
        finish_reason=getattr(message, "stop_reason", None),
        usage=Usage(
            input_tokens=getattr(usage, "input_tokens", 0) or 0,
            output_tokens=getattr(usage, "output_tokens", 0) or 0,
        ),
        model=getattr(message, "model", None),
        latency_s=latency,
    )


def _translate(exc: Exception, url: str) -> ModelError | None:
    """Return our error for an ``anthropic`` SDK exception, ``None`` for anything else."""
    import anthropic

    return translate_sdk_error(exc, anthropic, anthropic.AnthropicError, _PROVIDER, url=url)
