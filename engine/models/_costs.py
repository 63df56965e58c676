"""What a model call cost in dollars: prices the user gives, or the maintained table's.

A call's price comes, first found, from the model's own ``price``, the prices given by model
name (``Engine(prices=...)``), or, for OpenAI's and Anthropic's APIs and the gateways the
table knows by URL, the `genai-prices <https://pypi.org/project/genai-prices/>`_ table that
Pydantic AI uses (the ``prices`` extra; the ``openai`` and ``anthropic`` extras bring it
too). The table is the copy shipped in the package: it is never updated over the network at
run time. A model found nowhere has an unknown cost, ``None``, never ``0``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from functools import cache
from typing import TYPE_CHECKING

from engine._base import log
from engine.models._anthropic import AnthropicModel
from engine.models._openai import OpenAIModel
from engine.models._price import DIGITS, Price

if TYPE_CHECKING:
    from engine.models._types import Model, Response

__all__ = ["call_cost", "table_cost"]


def call_cost(
    model: Model, response: Response, prices: Mapping[str, Price] | None = None
) -> float | None:
    """Return what one model call cost in dollars, or ``None`` when its price is unknown.

    The price is, first found: the model's own ``price`` attribute, ``prices`` under the
    model's name (or the model the reply names), then the maintained table for a model it
    knows (:func:`table_cost`).
    """
    usage = response.usage
    price = getattr(model, "price", None)
    if price is None and prices:
        price = prices.get(model.name)
        if price is None and response.model:
            price = prices.get(response.model)
    if isinstance(price, Price):
        return price.cost(usage.input_tokens, usage.output_tokens)
    source = _table_source(model)
    if source is None:
        return None
    provider, url = source
    for name in dict.fromkeys(n for n in (response.model, model.name) if n):
        cost = table_cost(name, usage.input_tokens, usage.output_tokens, provider, url)
        if cost is not None:
            return cost
    return None


def table_cost(
    model_ref: str,
    input_tokens: int,
    output_tokens: int,
    provider: str | None = None,
    api_url: str | None = None,
) -> float | None:
    """Return the table's cost of a call in dollars, or ``None`` when it does not know it.

    Args:
        model_ref: The model's name as the provider calls it (dated names match too).
        input_tokens: Input tokens of the call.
        output_tokens: Output tokens of the call.
        provider: The table's provider id (``"openai"``, ``"anthropic"``), or ``None``.
        api_url: The server's URL, for a provider the table knows by URL (a gateway).

    Without the ``genai-prices`` package every cost is unknown.
    """
    if not _known(model_ref, provider, api_url):
        return None
    from genai_prices import Usage, calc_price

    usage = Usage(input_tokens=input_tokens, output_tokens=output_tokens)
    if provider is not None:
        priced = calc_price(usage, model_ref, provider_id=provider)
    else:
        priced = calc_price(usage, model_ref, provider_api_url=api_url)
    return round(float(priced.total_price), DIGITS)


@cache
def _known(model_ref: str, provider: str | None, api_url: str | None) -> bool:
    """Whether the table prices ``model_ref`` (looked up once per model and provider)."""
    try:
        from genai_prices import Usage, calc_price
    except ImportError:
        log.info("prices_table_missing", hint="pip install 'engine[prices]'")
        return False
    usage = Usage(input_tokens=0, output_tokens=0)
    try:
        if provider is not None:
            calc_price(usage, model_ref, provider_id=provider)
        else:
            calc_price(usage, model_ref, provider_api_url=api_url)
    except (LookupError, ValueError):
        return False
    return True


def _table_source(model: Model) -> tuple[str | None, str | None] | None:
    """Where the table may know ``model`` from: ``(provider id, None)`` or ``(None, URL)``.

    OpenAI's and Anthropic's own APIs by provider; any other server by its URL (a gateway
    the table knows, else nothing: a local server's model costs what you say it costs).
    """
    if isinstance(model, OpenAIModel):
        provider, variable, host = "openai", "OPENAI_BASE_URL", "api.openai.com"
    elif isinstance(model, AnthropicModel):
        provider, variable, host = "anthropic", "ANTHROPIC_BASE_URL", "api.anthropic.com"
    else:
        return None
    url = model.base_url or os.environ.get(variable)
    if not url or host in url:
        return provider, None
    return None, url
