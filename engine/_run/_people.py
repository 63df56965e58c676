"""The human side of a run's hooks: questions parked in the journal, answers replayed.

A human decision, or the approval of a model's pick, that meets no answer in the journal
journals its question (an ``ask`` record) and raises :class:`~engine.WaitingForAnswer`: the
run is stored ``waiting`` and the process goes on with other runs. A person's answer comes
with a resume (:meth:`~engine.Engine.answer`): it is validated at the step it answers, strictly,
journaled as a pick (or an ``approval`` record) made by a human, and the flow goes on; on every
later replay the journaled answer is returned and nobody is asked again. A passed deadline
settles a human decision by its ``on_deadline``.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from engine._base import (
    Clock,
    DecisionError,
    WaitingForAnswer,
    log,
    to_json,
    unencodable,
)
from engine._decision import Failure, Pick, RawPick, validate
from engine._run._order import ProbeDone
from engine._run._records import check_record
from engine._runtime import MODEL, Approval, HumanAsk, Question
from engine.store import JournalRecord, Run

if TYPE_CHECKING:
    from engine._base import Node
    from engine._decision import Menu
    from engine._run._journal import Journal
    from engine._run._order import ResumeOrder
    from engine.models import Request

__all__ = ["OnWaiting", "PeopleHooks", "check_human_pick", "tell_waiting", "wall_clock"]

#: Called with a run once it is stored ``waiting`` (to post its question to a queue or a
#: chat, say); sync or async. What it raises is logged, never raised into the run.
OnWaiting = Callable[[Run], Awaitable[None] | None]


class _Hooked(Protocol):
    """What the human side reads and writes of the run's hooks it is mixed into."""

    journal: Journal
    order: ResumeOrder
    probe: bool
    clock: Clock

    async def _write_pick(
        self, key: str, fingerprint: str, menu: Menu, pick: Pick, actor: str, attempts: int
    ) -> None: ...

    async def _human_pick(self, node: Node, menu: Menu, fingerprint: str) -> Pick: ...

    def _journaled(self, node: Node, menu: Menu, request: Request) -> tuple[str, Pick | None]: ...

    def _question_at(self, key: str, fingerprint: str, asked: Question) -> Question: ...


class PeopleHooks:
    """The :class:`~engine._runtime.Hooks` methods of a run for the steps a person settles.

    Mixed into :class:`~._hooks.JournalHooks`, whose journal, resume order and probe flag
    it reads, and whose pick records it writes.
    """

    __slots__ = ()

    async def human(
        self: _Hooked,
        node: Node,
        menu: Menu,
        request: Request,
        ask: HumanAsk,
        asked: Question,
        decide: Callable[[Request], Awaitable[Pick]],
    ) -> Pick:
        """Replay a person's journaled pick, take the answer this resume brings, or wait."""
        key = node.key
        fingerprint, replayed = self._journaled(node, menu, request)
        if replayed is not None:
            return replayed
        if key == self.order.where and self.order.pick is not None:
            return await self._human_pick(node, menu, fingerprint)
        if self.probe:  # another step's answer is being checked: this one does not wait here
            await anyio.sleep_forever()
        question = self._question_at(key, fingerprint, asked)
        deadline = question.get("deadline_at")
        if deadline is None or self.clock() < deadline:
            raise WaitingForAnswer([question])
        # The person's time ran out: the flow's fallback settles the decision.
        node.data["deadline"] = True
        if ask.on_deadline == MODEL:
            try:
                pick = await decide(request)
            except DecisionError as exc:  # suspended here: a resume's pick= settles it
                exc.where = exc.where or key
                exc.menu, exc.prompt = question.get("menu"), question.get("prompt")
                raise
            await self._write_pick(key, fingerprint, menu, pick, "model", 1)
            return pick
        fallback = ask.on_deadline
        data = fallback if isinstance(fallback, Mapping) else {"call": fallback, "args": {}}
        pick = check_human_pick(data, menu, key)
        node.data["actor"] = "deadline"
        await self._write_pick(key, fingerprint, menu, pick, "deadline", 0)
        return pick

    async def approval(
        self: _Hooked, node: Node, menu: Menu, pick: Pick, asked: Question
    ) -> Approval:
        """Replay a journaled approval, take the one this resume brings, or wait for it."""
        key = node.key
        record = self.journal.get("approval", key)
        if record is not None:
            node.data["replayed"] = True
            return Approval.of(record.data)
        answer = self.order.approval if key == self.order.where else None
        if answer is None:
            if self.probe:
                await anyio.sleep_forever()
            raise WaitingForAnswer([self._question_at(key, "", asked)])
        if answer.verdict == "edit":
            edited = check_human_pick({"call": pick.option.name, "args": answer.args}, menu, key)
            answer = Approval("edit", edited.args)
        if self.probe:
            raise ProbeDone
        await self.journal.write(
            JournalRecord(key=key, kind="approval", actor="human", data=answer.to_dict())
        )
        return answer

    def _question_at(self: _Hooked, key: str, fingerprint: str, asked: Question) -> Question:
        """The question at ``key``: as first asked (journaled then), or journaled now."""
        record = self.journal.get("ask", key)
        if record is not None:
            if fingerprint:
                check_record(record, fingerprint, key, "the question")
            question: Question = dict(record.data)
            return question
        now = self.clock()
        question = dict(asked, asked_at=now)
        if asked.get("deadline_at") is not None:
            question["deadline_at"] = now + (asked["deadline_at"] - asked["asked_at"])
        # It rides with the run's last write, which stores the run waiting: a crash before
        # that asks again, as the run's status never said it waited.
        self.journal.ride(
            JournalRecord(key=key, kind="ask", fingerprint=fingerprint, data=question)
        )
        return question


def check_human_pick(data: Mapping[str, Any], menu: Menu, where: str) -> Pick:
    """Validate a person's pick against ``menu``, strictly; refuse what JSON cannot carry.

    Raises:
        DecisionError: The pick is invalid (``human_pick`` is set); nothing was journaled.
    """
    raw = (
        RawPick(data["call"], data.get("args"), "args" in data, {})
        if "call" in data
        else None  # names no call: no pick at all (docs/decisions.md §7.1)
    )
    try:
        pick = validate(raw, menu, strict=True)
        problem = unencodable(pick.args)
        if problem is not None:  # refused before the resume, as any invalid pick is
            raise Failure(
                "bad_args", f"the pick's arguments hold {problem}, which JSON cannot carry"
            )
        to_json(pick.args, what=f"the arguments of the pick at {where!r}")
    except Failure as failure:
        raise DecisionError(
            failure.kind,
            failure.message,
            replies=[],
            attempts=0,
            options=menu.names,
            where=where,
            human_pick=True,
        ) from None
    return pick


async def tell_waiting(on_waiting: OnWaiting, run: Run) -> None:
    """Tell ``on_waiting`` that ``run`` waits; what it raises is logged and goes no further."""
    try:
        told = on_waiting(run)
        if inspect.isawaitable(told):
            await told
    except Exception as exc:
        log.warning("on_waiting_failed", run_id=run.run_id, error=f"{type(exc).__name__}: {exc}")


def wall_clock() -> float:
    """The default clock of a run's deadlines: the time of day, in seconds."""
    return time.time()
