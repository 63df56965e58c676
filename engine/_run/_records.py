"""The records a run's journal holds, made and checked: the plain work of every transition.

A request's fingerprint, a model reply's record data, a failed decision's record, and the
check that a journaled record answers the same request. These run on every transition, as
plain functions (no awaiting): the module is compiled where the engine's hot modules are
(``tools/native.py``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from engine._base import DecisionError, NonDeterminismError, json_safe
from engine.models import Request, Response, TextBlock, Usage
from engine.store import JournalRecord

__all__ = ["check_record", "dumped", "failure_record", "request_fingerprint"]


def request_fingerprint(request: Request) -> str:
    """Fingerprint what a request asks: its messages, tools and offered choices.

    Model settings (``request.settings``, ``max_tokens``) and enforcement are left out on
    purpose: they say how to answer, not what is asked, so a resume with a raised
    ``max_tokens`` or another temperature replays the journal instead of failing as
    non-deterministic, and journals written before settings existed keep replaying.
    """
    parts = [f"{m.role}\x1f{_text(m.content) or m.text}" for m in request.messages]
    tools, choices = request.tools, request.choices
    parts.append("\x1f".join([t.name for t in tools]) if tools else "")
    parts.append("\x1f".join([c.name for c in choices]) if choices else "")
    # surrogatepass: a reply sent back for a re-pick may hold a lone surrogate, and its
    # fingerprint must not fail (text without one encodes as plain UTF-8, as before).
    text = "\x1e".join(parts).encode(errors="surrogatepass")
    return hashlib.blake2b(text, digest_size=8).hexdigest()


def _text(content: Sequence[object]) -> str:
    """The text of a message of one text block (most are), as ``Message.text`` reads it;
    ``""`` for any other, whose text ``Message.text`` joins."""
    if len(content) == 1:
        block = content[0]
        if type(block) is TextBlock:
            return block.text
    return ""


def check_record(record: JournalRecord, fingerprint: str, key: str, what: str) -> None:
    """Raise :class:`NonDeterminismError` when ``record`` was journaled for another request."""
    if record.fingerprint != fingerprint:
        raise NonDeterminismError(key, f"{what} differs from the one journaled under this key")


def failure_record(
    key: str, fingerprint: str, options: list[str], exc: DecisionError
) -> JournalRecord:
    """Return the record of a decision that failed at ``key``, for a replay to fail alike."""
    # Replies and details are for people (a replay re-raises them, it parses nothing): one
    # holding what JSON cannot carry is kept readable, escaped, so the failure is stored.
    data = {
        "kind": exc.kind,
        "detail": json_safe(exc.detail),
        "replies": json_safe(exc.replies),
        "attempts": exc.attempts,
        "options": options,
    }
    return JournalRecord(key=key, kind="decision_failed", fingerprint=fingerprint, data=data)


# The fields of a reply and its usage that :func:`dumped` writes out by hand: when either
# model has others, every reply goes through its serializer.
_BY_HAND = tuple(Response.model_fields) == (
    "text",
    "tool_calls",
    "finish_reason",
    "usage",
    "model",
    "latency_s",
    "enforcement",
) and tuple(Usage.model_fields) == ("input_tokens", "output_tokens")


def dumped(response: Response) -> dict[str, Any]:
    """Return ``response.model_dump(mode="json")``: a reply as its model record keeps it.

    A reply of text (no tool calls, the usual one) is written out by hand: its fields are
    already JSON values, so its dump is them, as they are.
    """
    values = response.__dict__
    usage = values["usage"]
    if (
        _BY_HAND
        and not values["tool_calls"]
        and type(response) is Response
        and type(usage) is Usage
    ):
        return {
            "text": values["text"],
            "tool_calls": [],
            "finish_reason": values["finish_reason"],
            "usage": {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens},
            "model": values["model"],
            "latency_s": values["latency_s"],
            "enforcement": values["enforcement"],
        }
    return response.model_dump(mode="json")  # a subclass's dump is its own serializer's
