"""An OpenAI-compatible chat model on the official ``openai`` SDK.

Anything that speaks OpenAI's chat completions protocol works through ``base_url``: the
OpenAI API itself, vLLM, Ollama, the llama.cpp server, LM Studio, and gateways such as
OpenRouter or LiteLLM's proxy. The SDK is imported, and the key read, at the first call, so
``import engine`` works without the ``openai`` extra and without a key.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

from engine._base import BadRequestError, ModelError, log
from engine._base import ProviderUnavailableError as _Unavailable
from engine.models._enforcement import (
    Enforce,
    EnforceMode,
    apply_mode,
    check_enforce,
    modes_to_try,
    remember_mode,
    remembered_mode,
    take_pick,
)
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
from engine.models._wire import text_of, translate_sdk_error

if TYPE_CHECKING:
    from openai import AsyncOpenAI

__all__ = ["OpenAIModel"]

_PROVIDER = "openai"
# Local servers take any key, but the SDK insists on one.
_LOCAL_KEY = "not-needed"
_OPENAI_URL = "https://api.openai.com/v1"


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
        enforce: How a decision's pick is constrained to the menu on this server (see
            docs/decisions.md, "Enforced picks"): ``"json_schema"`` (``response_format``
            ``json_schema``: OpenAI, vLLM, llama.cpp's llama-server, recent Ollama),
            ``"json_object"`` (``{"type": "json_object", "schema": ...}``:
            llama-cpp-python's server), ``"tool"`` (a forced named tool call), ``"text"``
            (none: the reply is parsed), or ``"auto"``: try those in that order, move on
            at the server's first refusal of a mode (a 4xx, or a 5xx that is a
            request-validation error; never retried as a transport failure) and remember
            for the process, per base URL and model name, the mode it answered. ``True``
            is ``"json_schema"`` and ``False`` is ``"text"``, as before; ``None`` (the
            default) is ``"json_schema"`` on OpenAI's own API and ``"text"`` elsewhere.
            Anything else is a ``ValueError`` here.
        timeout: Seconds the SDK waits for one HTTP response.
        settings: The model's :class:`~engine.models.ModelSettings` (a runtime's and a
            call's are laid over them): sent as ``temperature``, ``top_p``, ``max_tokens``
            (``max_completion_tokens`` on OpenAI's API), ``seed``, ``stop``, and ``extra``
            as extra body fields.
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
        enforce: Enforce | bool | None = None,
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
        self._enforce = check_enforce(enforce)
        self.price = check_price(price)

    def __repr__(self) -> str:
        where = f", base_url={self.base_url!r}" if self.base_url else ""
        return f"OpenAIModel({self.model!r}{where})"

    @property
    def enforce(self) -> Enforce:
        """The enforcement setting, resolved: a mode name, or ``"auto"``."""
        setting = self._enforce
        if setting is None:
            return "json_schema" if self._official() else "text"
        return setting

    @property
    def enforcement(self) -> Enforce | None:
        """How picks are constrained: a mode (``auto``'s once found), ``"auto"``, or ``None``.

        ``None`` means text: the runtime then asks for no enforcement at all.
        """
        setting = self.enforce
        if setting == "auto":
            setting = remembered_mode(self._mode_key(self.model)) or "auto"
        return None if setting == "text" else setting

    def _mode_key(self, model: str) -> tuple[str, str]:
        return (self._url(), model)

    def _url(self) -> str:
        """The base URL calls go to, as the SDK's client has it."""
        if self._given is not None:
            return str(self._given.base_url).rstrip("/")
        url = self.base_url or os.environ.get("OPENAI_BASE_URL") or _OPENAI_URL
        return url.rstrip("/")

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
        url = self._url()

        def translate(exc: Exception) -> ModelError | None:
            return _translate(exc, url)

        enforce = request.enforce
        if enforce is None:
            completion, latency = await self._send(
                client.chat.completions.create, self._params(request), translate
            )
            return _response(completion, None, "text", latency)
        setting = self.enforce
        key = self._mode_key(request.model or self.model)
        modes = modes_to_try(setting, key)
        for index, mode in enumerate(modes):
            params = self._params(request)
            apply_mode(params, enforce, mode)
            try:
                completion, latency = await self._send(
                    client.chat.completions.create, params, translate
                )
            except BadRequestError as exc:
                if index + 1 < len(modes):
                    log.info("enforcement_refused", url=url, mode=mode, next=modes[index + 1])
                    continue
                if setting != "auto" and mode != "text":
                    raise BadRequestError(
                        f"{exc}; if the server does not take enforce={mode!r}, use "
                        "enforce='auto', or the mode it takes",
                        provider=_PROVIDER,
                    ) from exc
                raise
            if setting == "auto" and remembered_mode(key) != mode:
                remember_mode(key, mode)
                log.info("enforcement_found", url=url, mode=mode)
            return _response(completion, enforce, mode, latency)
        raise AssertionError("unreachable")  # pragma: no cover - modes is never empty

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
        settings = effective_settings(self.settings, request)
        if settings.max_tokens is not None:
            # OpenAI's newer models only take max_completion_tokens; other servers know
            # max_tokens best.
            key = "max_completion_tokens" if self._official() else "max_tokens"
            params[key] = settings.max_tokens
        for name in ("temperature", "top_p", "seed"):
            value = getattr(settings, name)
            if value is not None:
                params[name] = value
        if settings.stop is not None:
            params["stop"] = list(settings.stop)
        if settings.extra:
            params["extra_body"] = settings.extra
        if request.enforce is None and request.response_format is not None:
            params["response_format"] = request.response_format
        return params


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
        # An empty string, not null: llama-cpp-python's server refuses a null content.
        out["content"] = text_of(message)
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


def _response(
    completion: Any, enforce: PickSchema | None, mode: EnforceMode, latency: float
) -> Response:
    choices = getattr(completion, "choices", None)
    if not choices:
        raise _Unavailable("openai answered with no choices", provider=_PROVIDER)
    choice = choices[0]
    message = choice.message
    text = message.content or ""
    # Only function calls: the engine offers no other kind of tool.
    calls = [_tool_call(c) for c in message.tool_calls or () if _is_function(c)]
    if enforce is not None:
        text, calls = take_pick(text, calls, enforce, mode)
    usage = getattr(completion, "usage", None)
    return Response(
        text=text,
        tool_calls=calls,
        enforcement=mode if enforce is not None else None,
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


def _translate(exc: Exception, url: str) -> ModelError | None:
    """Return our error for an ``openai`` SDK exception, ``None`` for anything else."""
    import openai

    return translate_sdk_error(exc, openai, openai.OpenAIError, _PROVIDER, url=url)
