"""What a person's form does to a run: answer it, resume it with a pick or on a model.

Every answer goes through the engine (:meth:`Engine.answer` for a waiting run,
:meth:`Engine.resume` with ``pick=`` for a suspended one), so it is checked by the rules
``engine resume --pick`` checks by, and a refused answer leaves the run as it was.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from engine._base import DecisionError, EngineError
from engine._run import Engine
from engine.models import Model
from engine.store import Run, Store
from engine.ui._forms import OptionForm, field_errors, option_forms, read_pick

__all__ = ["Engines", "Outcome", "Settling", "settle", "settling_of"]


class Engines:
    """One engine per model over the inspector's store, made when first needed."""

    def __init__(self, store: Store, model: Model | str | None) -> None:
        self.store = store
        self.default = model
        self._made: dict[str, Engine] = {}

    def get(self, spec: str = "") -> Engine:
        """The engine whose live calls go to ``spec`` (the inspector's model when empty).

        Raises:
            ValueError: No model was named and the inspector has none; or ``spec`` names
                no model.
        """
        chosen: Model | str | None = spec.strip() or self.default
        if chosen is None:
            raise ValueError(
                "name a model to go on with (the run's later decisions ask it), for example "
                "openai:gpt-4o-mini, or start `engine ui --model ...`"
            )
        key = chosen if isinstance(chosen, str) else f"default:{id(chosen)}"
        if key not in self._made:
            try:
                self._made[key] = Engine(model=chosen, store=self.store)
            except (ValueError, TypeError, ImportError) as exc:
                raise ValueError(f"model {chosen!r}: {exc}") from None
        return self._made[key]


@dataclass(slots=True)
class Settling:
    """One question of a run a person may settle: a stopped decision, or a waiting one."""

    run: Run
    kind: str  # suspended, decision (a person's pick), approval
    where: str | None
    name: str | None
    prompt: str | None
    forms: list[OptionForm]
    proposed: dict[str, Any] | None = None  # an approval's pick
    error: str | None = None
    sent: dict[str, str] = field(default_factory=dict)

    @property
    def key(self) -> str:
        """A name for this question unique within the page."""
        return f"{self.run.run_id}|{self.where or ''}"


def settling_of(run: Run, sent: Mapping[str, str] | None = None) -> list[Settling]:
    """The questions of a waiting or suspended run, each with its forms."""
    error = run.error
    if error is None:
        return []
    if run.status == "suspended":
        return [
            Settling(
                run,
                "suspended",
                error.where,
                None,
                error.prompt,
                option_forms(error.menu or [], sent),
                sent=dict(sent or {}),
            )
        ]
    if run.status != "waiting":
        return []
    found = []
    for q in error.questions or []:
        mine = sent if sent is not None and sent.get("where") == q.get("where") else None
        proposed = q.get("pick") if q.get("kind") == "approval" else None
        found.append(
            Settling(
                run,
                str(q.get("kind")),
                q.get("where"),
                q.get("name"),
                q.get("prompt"),
                option_forms(q.get("menu") or [], mine, proposed),
                proposed=proposed,
                sent=dict(mine or {}),
            )
        )
    return found


@dataclass(slots=True)
class Outcome:
    """What an answer did: the run as it ended, or the forms with the errors beside fields."""

    run: Run | None
    settlings: list[Settling]


async def settle(engines: Engines, run: Run, sent: Mapping[str, str]) -> Outcome:
    """Answer or resume ``run`` with the form a person sent.

    The form names the question (``where``), the option (``call``) and its arguments, or an
    approval's ``approval`` (approve, edit, reject, with ``reason``), and ``model``.
    """
    settlings = settling_of(run, sent)
    where = sent.get("where") or None
    target = next((s for s in settlings if s.where == where), settlings[0] if settlings else None)
    if target is None:
        return Outcome(None, settlings)
    try:
        engine = engines.get(sent.get("model", ""))
        done = await _apply(engine, target, sent)
    except DecisionError as exc:
        _place(target, sent.get("call", ""), exc.detail)
        return Outcome(None, settlings)
    except (ValueError, TypeError, LookupError, EngineError) as exc:
        target.error = str(exc).strip("'\"")
        return Outcome(None, settlings)
    return Outcome(done, settlings)


async def _apply(engine: Engine, target: Settling, sent: Mapping[str, str]) -> Run:
    run_id = target.run.run_id
    if target.kind == "approval":
        action = sent.get("approval", "")
        if action == "approve":
            return await engine.answer(run_id, approve=True, where=target.where)
        if action == "reject":
            reason = sent.get("reason", "").strip() or "rejected by a person"
            return await engine.answer(run_id, reject=reason, where=target.where)
        if action == "edit" and target.proposed is not None:
            pick = read_pick(target.forms, str(target.proposed.get("call")), sent)
            edit = pick.get("args", {})
            return await engine.answer(run_id, edit=edit, where=target.where)
        raise ValueError("choose approve, edit (with the arguments) or reject (with a reason)")
    pick = read_pick(target.forms, sent.get("call", ""), sent)
    if target.kind == "suspended":
        return await engine.resume(run_id, pick=pick)
    return await engine.answer(run_id, pick, where=target.where)


def _place(target: Settling, call: str, detail: str) -> None:
    if target.kind == "approval" and target.proposed is not None:
        call = str(target.proposed.get("call"))
    left = field_errors(target.forms, call, detail)
    if left is not None:
        target.error = left
