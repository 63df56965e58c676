"""Journaling hooks: record every reply, pick and step result, and replay them on resume.

Every record sits under its node's deterministic key with a fingerprint of what was asked.
On replay a journaled model call returns its recorded reply, a journaled decision its
recorded pick, a journaled step its recorded result, and live work starts at the first key
with no record. A fingerprint that no longer matches raises :class:`NonDeterminismError`.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from engine._base import (
    DecisionError,
    NonDeterminismError,
    RunStopped,
    check_replayable,
    digest,
    from_json,
    to_json,
)
from engine._decision import Failure, Pick, RawPick, validate
from engine._retries import OnRetry, RetryEvent, RetryLedger, RunBudget
from engine._runtime import Hooks
from engine.models import Model, Request, Response
from engine.store import JournalRecord, Run, Store

if TYPE_CHECKING:
    from engine._base import Node
    from engine._decision import Menu

__all__ = [
    "Control",
    "JournalHooks",
    "ProbeDone",
    "ResumeOrder",
    "ledger_of",
    "request_fingerprint",
]


_REPLAYED_LAYERS = frozenset({"parse", "decision"})
# A branch of engine.gather/map in a key: its index, then its counter (``2:0``).
_BRANCH = re.compile(r"\d+:\d+")


class Control(Protocol):
    """What the executor tells a running run: why to stop at its next transition, if at all."""

    @property
    def stopping(self) -> str | None: ...


@dataclass(frozen=True, slots=True)
class ResumeOrder:
    """How a resume treats the decision that stopped the run."""

    where: str | None = None
    pick: Mapping[str, Any] | None = None
    model: Model | None = None
    max_retries: int | None = None
    #: The run-level retry (layer 4) this execution is, when a run policy resumed it.
    retry: RetryEvent | None = None

    @classmethod
    def of(
        cls,
        run: Run,
        *,
        pick: Mapping[str, Any] | None = None,
        model: Model | None = None,
        max_retries: int | None = None,
        retry: RetryEvent | None = None,
    ) -> ResumeOrder:
        """Return the order of a resume of ``run``: the decision it stopped at, if it did.

        Raises:
            TypeError: ``pick`` is not a mapping.
            ValueError: ``pick`` for a run that did not stop at a decision.
        """
        if pick is not None and not isinstance(pick, Mapping):
            raise TypeError(
                f'pick= must be a dict such as {{"call": "name", "args": {{...}}}}, got {pick!r}'
            )
        error = run.error
        # A run that is running here was taken over from an execution that died: it stopped
        # where its stored error says, unless its journal has moved past that point.
        decided = (
            run.status in ("suspended", "running") and error is not None and bool(error.options)
        )
        if pick is not None and not decided:
            why = f" ({error.kind})" if error is not None else ""
            raise ValueError(
                f"pick= settles a suspended run's decision; run {run.run_id!r} is {run.status}{why}"
            )
        where = error.where if decided and error is not None else None
        return cls(where, pick, model, max_retries, retry)


class ProbeDone(Exception):
    """Raised by a probe replay once the human pick validated at the failing decision."""


@dataclass(slots=True)
class _Counts:
    model_calls: int = 0
    transitions: int = 0
    input_tokens: int = 0
    output_tokens: int = 0

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass(slots=True)
class JournalHooks(Hooks):
    """Hooks of one run: replay what the journal holds, record what is done live."""

    run_id: str
    store: Store
    journal: list[JournalRecord]
    owner: str | None = None
    order: ResumeOrder = field(default_factory=ResumeOrder)
    probe: bool = False
    #: Wraps each model before a live call (the engine's provider limits and breakers).
    guard: Callable[[Model], Model] | None = None
    budget: RunBudget | None = None
    #: What earlier executions of the run spent: tokens, and retry attempts by layer.
    tokens_before: int = 0
    retries_before: Mapping[str, int] = field(default_factory=dict)
    control: Control | None = None
    on_retry: OnRetry | None = None
    counts: _Counts = field(default_factory=_Counts)
    ledger: RetryLedger = field(init=False)
    _records: dict[tuple[str, str], JournalRecord] = field(default_factory=dict)
    _failures: dict[str, int] = field(default_factory=dict)
    _caught: set[str] = field(default_factory=set)
    _pending: list[JournalRecord] = field(default_factory=list)
    #: The last request fingerprinted, and its fingerprint: a decision and its first model
    #: call fingerprint the same request object.
    _asked: tuple[Request | None, str] = (None, "")

    def __post_init__(self) -> None:
        last_failure: dict[str, int] = {}
        for index, record in enumerate(self.journal):
            self._records[(record.kind, record.key)] = record
            if record.kind == "decision_failed":
                self._failures[record.key] = self._failures.get(record.key, 0) + 1
                last_failure[record.key] = index
        # A failure the flow caught and moved past (records of other nodes follow it) is part
        # of the run's history and replays as a failure; one that stopped the run is asked
        # afresh. The records of an ask afresh (keys ``key@1/...``) are not moving past it.
        self._caught = {
            k
            for k, i in last_failure.items()
            if any(r.kind != "retry" and _moved_past(k, r.key) for r in self.journal[i + 1 :])
        }
        # Re-picks and decision retries replay from journaled replies, and meet their attempts
        # again; other layers' attempts are live whenever they happen, so each one counts.
        seen = [
            (r.data["layer"], r.key, r.data["attempt"])
            for r in self.journal
            if r.kind == "retry" and isinstance(r.data, dict) and r.actor in _REPLAYED_LAYERS
        ]
        # What earlier executions spent: the stored counts, or the journal's where it holds
        # more (an execution that died never stored its counts, but journaled its attempts).
        before = dict(self.retries_before)
        journaled: dict[str, int] = {}
        for record in self.journal:
            if record.kind == "retry" and record.actor is not None:
                journaled[record.actor] = journaled.get(record.actor, 0) + 1
        for layer, count in journaled.items():
            before[layer] = max(before.get(layer, 0), count)
        # The ledger holds nothing of the hooks: no reference cycle keeps a run's journal
        # alive after the run (the garbage collector would have to find it).
        self.ledger = RetryLedger(self.budget, before, seen, self.on_retry)

    def _fingerprint(self, request: Request) -> str:
        asked, fingerprint = self._asked
        if asked is not request:
            fingerprint = request_fingerprint(request)
            self._asked = (request, fingerprint)
        return fingerprint

    def _live(self, key: str) -> None:
        """Check, before live work at ``key``, that the run may go on."""
        if self.control is not None and self.control.stopping is not None:
            raise RunStopped(self.control.stopping, where=key)
        if self.budget is not None:
            self.budget.check_tokens(self.tokens_before + self.counts.tokens)

    # -- model calls ---------------------------------------------------------------------------

    async def model_call(
        self,
        node: Node,
        model: Model,
        request: Request,
        call: Callable[[Model, Request], Awaitable[Response]],
    ) -> Response:
        """Replay the journaled reply under this key, or call the model and journal the reply."""
        fingerprint = self._fingerprint(request)
        record = self._records.get(("model", node.key))
        if record is not None:
            _check(record, fingerprint, node.key, "the model request")
            node.data["replayed"] = True
            return Response.model_validate(record.data)
        if self.probe:
            await _park()
        self._live(node.key)
        live = self.order.model or model
        response = await call(self.guard(live) if self.guard is not None else live, request)
        # Journal the raw reply before anyone parses it: a crash after this line never pays
        # for the call again.
        await self._write(
            JournalRecord(
                key=node.key,
                kind="model",
                fingerprint=fingerprint,
                actor=response.model,
                data=response.model_dump(mode="json"),
            )
        )
        self.counts.model_calls += 1
        self.counts.input_tokens += response.usage.input_tokens
        self.counts.output_tokens += response.usage.output_tokens
        if self.budget is not None:
            self.budget.check_tokens(self.tokens_before + self.counts.tokens)
        return response

    # -- decisions -----------------------------------------------------------------------------

    async def decision(
        self,
        node: Node,
        menu: Menu,
        request: Request,
        decide: Callable[[Request], Awaitable[Pick]],
    ) -> Pick:
        """Replay the journaled pick, replay a journaled failure, or decide live and journal it."""
        key = node.key
        fingerprint = digest(self._fingerprint(request), menu.text)
        record = self._records.get(("pick", key))
        if record is not None:
            return self._replay_pick(record, fingerprint, menu, node)
        generation = self._failures.get(key, 0)
        if key == self.order.where:
            if self.order.pick is not None:
                return await self._human_pick(node, menu, fingerprint)
            if self.order.max_retries is not None:
                setattr(decide, "max_retries", self.order.max_retries)  # noqa: B010
        elif key in self._caught:
            failure = self._replayed_failure(key, fingerprint, menu)
            node.data.update(replayed=True, attempts=failure.attempts, failures=[failure.kind])
            raise failure
        if self.probe:  # its model calls replay from the journal, or park
            return await decide(request)
        if generation:
            node.key = f"{key}@{generation}"  # a fresh ask: its calls get keys of their own
        try:
            pick = await decide(request)
        except DecisionError as exc:
            if getattr(exc, "where", None) is None:
                exc.where = key  # type: ignore[attr-defined]
                await self._write(_failure_record(key, fingerprint, menu, exc))
            raise
        finally:
            node.key = key
        attempts, actor = int(node.data.get("attempts", 1)), _actor(node)
        node.data["actor"] = actor
        await self._write_pick(key, fingerprint, menu, pick, actor, attempts)
        return pick

    def _replay_pick(self, record: JournalRecord, fingerprint: str, menu: Menu, node: Node) -> Pick:
        if record.fingerprint != fingerprint:
            then = record.data.get("options")
            detail = (
                f"the menu changed: it offered {then} when journaled and offers {menu.names} now"
                if then != menu.names
                else "the prompt or the options' parameters changed since it was journaled"
            )
            raise NonDeterminismError(record.key, detail)
        data = record.data
        try:
            pick = validate(RawPick(data["call"], data.get("args"), True, {}), menu)
        except Failure as failure:
            raise NonDeterminismError(
                record.key, f"the journaled pick no longer validates: {failure.message}"
            ) from None
        node.data["replayed"] = True
        node.data["attempts"] = data.get("attempts", 1)
        if record.actor is not None:
            node.data["actor"] = record.actor
        return pick

    async def _human_pick(self, node: Node, menu: Menu, fingerprint: str) -> Pick:
        pick_data = self.order.pick or {}
        raw = (
            RawPick(pick_data["call"], pick_data.get("args"), "args" in pick_data, {})
            if "call" in pick_data
            else None  # names no call: no pick at all (DECISION-SPEC §7.1)
        )
        try:
            pick = validate(raw, menu)
        except Failure as failure:
            error = DecisionError(
                failure.kind, failure.message, replies=[], attempts=0, options=menu.names
            )
            error.where = node.key  # type: ignore[attr-defined]
            error.human_pick = True  # type: ignore[attr-defined]
            raise error from None
        if self.probe:
            raise ProbeDone
        node.data["attempts"], node.data["actor"] = 0, "human"
        await self._write_pick(node.key, fingerprint, menu, pick, "human", 0)
        return pick

    def _replayed_failure(self, key: str, fingerprint: str, menu: Menu) -> DecisionError:
        record = self._records[("decision_failed", key)]
        _check(record, fingerprint, key, "the decision")
        data = record.data
        error = DecisionError(
            data["kind"],
            data["detail"],
            replies=data.get("replies", []),
            attempts=data.get("attempts", 1),
            options=menu.names,
        )
        error.where = key  # type: ignore[attr-defined]
        return error

    async def _write_pick(
        self, key: str, fingerprint: str, menu: Menu, pick: Pick, actor: str, attempts: int
    ) -> None:
        args = to_json(pick.args, what=f"the arguments of the pick at {key!r}")
        # The attempts and who picked travel with the pick, so a replay shows them as they were.
        data = {"call": pick.option.name, "args": args, "options": menu.names, "attempts": attempts}
        record = JournalRecord(
            key=key, kind="pick", fingerprint=fingerprint, actor=actor, data=data
        )
        self.counts.transitions += 1
        if actor == "human":
            await self._write(record)
            return
        # A model's pick is re-derived from its journaled reply when lost, so it need not be
        # on disk before the flow moves on: it rides with the next write (same transaction,
        # same order) instead of costing a commit of its own.
        self._pending.append(record)
        self._records[(record.kind, record.key)] = record

    def take_pending(self) -> list[JournalRecord]:
        """Hand over the records still waiting for a write to ride with (the run's end)."""
        pending, self._pending = self._pending, []
        if self.ledger.fresh:
            pending.extend(self._retries())
        return pending

    def _retries(self) -> list[JournalRecord]:
        # The ledger's attempts ride with the next write, like a model's pick: no commit of
        # their own.
        return [
            JournalRecord(
                key=event.key,
                kind="retry",
                actor=event.layer,
                data={
                    "layer": event.layer,
                    "attempt": event.attempt,
                    "kind": event.kind,
                    "message": event.message,
                },
            )
            for event in self.ledger.take()
        ]

    # -- steps ---------------------------------------------------------------------------------

    async def step(
        self, node: Node, fn: object, run: Callable[[], Awaitable[Any]], returns: object
    ) -> Any:
        """Return the journaled result of this step, or run it and journal its result."""
        fingerprint = digest(node.name)
        record = self._records.get(("step", node.key))
        if record is not None:
            _check(record, fingerprint, node.key, f"the step {node.name!r}")
            node.data["replayed"] = True
            return from_json(record.data, returns, what=f"step {node.key!r}")
        if self.probe:
            where = self.order.where
            if where is None or not where.startswith(f"{node.key}/"):
                await _park()
            # The failing decision lies inside this unfinished step: go in to reach it.
            return await run()
        self._live(node.key)
        result = await run()
        what = f"the result of step {node.name!r} at {node.key!r}"
        data = to_json(result, what=what)
        check_replayable(data, result, returns, what=what)
        await self._write(
            JournalRecord(key=node.key, kind="step", fingerprint=fingerprint, data=data)
        )
        self.counts.transitions += 1
        return result

    async def _write(self, record: JournalRecord) -> None:
        """Append ``record`` after the records waiting to ride with a write, and see it land."""
        batch = self.take_pending()
        batch.append(record)
        # The records must land even when the run is being cancelled: shield the write. The
        # store bounds it (SQLite's busy timeout, a database statement timeout), so a stuck
        # store raises instead of hanging the cancellation.
        with anyio.CancelScope(shield=True):
            await self.store.append(self.run_id, batch, owner=self.owner)
        self._records[(record.kind, record.key)] = record


def _moved_past(failure: str, later: str) -> bool:
    """Tell whether a record at ``later``, after a failure at ``failure``, shows the flow
    went on past it: not the failure's own ask afresh (``key@1/...``), and not a sibling
    branch of a gather (its work goes on while the failing branch stops the run).
    """
    if later == failure or later.startswith(f"{failure}@"):
        return False
    for mine, theirs in zip(failure.split("/"), later.split("/"), strict=False):
        if mine != theirs:
            return not (_BRANCH.fullmatch(mine) and _BRANCH.fullmatch(theirs))
    return True


async def _park() -> None:
    """Wait for good: a probe does no live work, but lets other branches go on replaying."""
    await anyio.sleep_forever()


def ledger_of(journal: list[JournalRecord]) -> list[dict[str, Any]]:
    """Return the retry ledger a journal holds: one entry per retry attempt, oldest first."""
    return [
        {**r.data, "key": r.key, "at": r.created_at}
        for r in journal
        if r.kind == "retry" and isinstance(r.data, dict)
    ]


def request_fingerprint(request: Request) -> str:
    """Fingerprint what a request asks: its messages, tools and offered choices."""
    parts = [f"{m.role}\x1f{m.text}" for m in request.messages]
    parts.append("\x1f".join(t.name for t in request.tools or ()))
    parts.append("\x1f".join(c.name for c in request.choices or ()))
    return hashlib.blake2b("\x1e".join(parts).encode(), digest_size=8).hexdigest()


def _actor(node: Node) -> str:
    """Who made a live pick: the model at once, a re-pick, or a decision policy's retry."""
    if node.data.get("retried"):
        return "retry"
    return "model" if int(node.data.get("attempts", 1)) == 1 else "repick"


def _check(record: JournalRecord, fingerprint: str, key: str, what: str) -> None:
    if record.fingerprint != fingerprint:
        raise NonDeterminismError(key, f"{what} differs from the one journaled under this key")


def _failure_record(key: str, fingerprint: str, menu: Menu, exc: DecisionError) -> JournalRecord:
    data = {
        "kind": exc.kind,
        "detail": exc.detail,
        "replies": exc.replies,
        "attempts": exc.attempts,
        "options": menu.names,
    }
    return JournalRecord(key=key, kind="decision_failed", fingerprint=fingerprint, data=data)
