"""The hooks of a durable run: replay what its journal holds, journal what is done live.

On replay a journaled model call returns its recorded reply, a journaled decision its
recorded pick, a journaled step its recorded result, and live work starts at the first key
with no record. A fingerprint that no longer matches raises :class:`NonDeterminismError`.
The records are the :class:`~._journal.Journal`'s, what the execution spends and whether it
may go on the :class:`~._spending.Spending`'s, and how a resume settles the decision it
stopped at the :class:`~._order.ResumeOrder`'s.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

import anyio

from engine._base import (
    Clock,
    DecisionError,
    JournalError,
    NonDeterminismError,
    check_replayable,
    digest,
    from_json,
    json_safe,
    to_json,
    unencodable,
)
from engine._decision import Failure, Pick, RawPick, asked_prompt, describe_menu, validate
from engine._retries import OnRetry, RunBudget
from engine._run._journal import Journal
from engine._run._order import ProbeDone, ResumeOrder
from engine._run._people import PeopleHooks, check_human_pick, wall_clock
from engine._run._records import check_record, dumped, failure_record, request_fingerprint
from engine._run._spending import Control, Spending
from engine._runtime import Hooks, note_settings
from engine.models import Model, Price, Request, Response
from engine.store import JournalRecord, Run, Store

if TYPE_CHECKING:
    from engine._base import Node
    from engine._decision import Menu

__all__ = ["JournalHooks", "journal_hooks"]


class JournalHooks(PeopleHooks, Hooks):
    """Hooks of one run: replay what the journal holds, record what is done live.

    Args:
        journal: The run's records, and where new ones go.
        spending: Counts the execution's work and says whether it may go on.
        order: How this execution treats the decision the run stopped at (a resume's).
        probe: Replay only, to check a human pick at the failing decision: park at the
            first live work instead of doing it.
        guard: Wraps each model before a live call (the engine's provider limits and
            breakers).
        clock: The time of day, in seconds, for the deadlines of human decisions.
    """

    __slots__ = ("_asked", "clock", "guard", "journal", "order", "probe", "spending")

    def __init__(
        self,
        journal: Journal,
        spending: Spending,
        *,
        order: ResumeOrder | None = None,
        probe: bool = False,
        guard: Callable[[Model], Model] | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.clock = clock if clock is not None else wall_clock
        self.journal = journal
        self.spending = spending
        self.order = order if order is not None else ResumeOrder()
        self.probe = probe
        self.guard = guard
        #: The last request fingerprinted, and its fingerprint: a decision and its first
        #: model call fingerprint the same request object.
        self._asked: tuple[Request | None, str] = (None, "")

    def _fingerprint(self, request: Request) -> str:
        asked, fingerprint = self._asked
        if asked is not request:
            fingerprint = request_fingerprint(request)
            self._asked = (request, fingerprint)
        return fingerprint

    # -- model calls ---------------------------------------------------------------------------

    def live_model(self, model: Model) -> Model:
        """Return the model live calls go to: a resume's own model, else ``model``."""
        return self.order.model or model

    async def model_call(
        self,
        node: Node,
        model: Model,
        request: Request,
        call: Callable[[Model, Request], Awaitable[Response]],
    ) -> Response:
        """Replay the journaled reply under this key, or call the model and journal the reply."""
        fingerprint = self._fingerprint(request)
        record = self.journal.get("model", node.key)
        if record is not None:
            check_record(record, fingerprint, node.key, "the model request")
            node.data["replayed"] = True
            return Response.model_validate(_unescaped(record.data))
        if self.probe:
            await _park()
        self.spending.check_live(node.key)
        live = self.order.model or model
        if live is not model:  # a resume's model sends settings of its own
            note_settings(node, live, request)
        response = await call(self.guard(live) if self.guard is not None else live, request)
        data = dumped(response)
        if "settings" in node.data:  # what the call was sent, journaled beside its reply
            data["settings"] = node.data["settings"]
        cost = self.spending.price(live, response)
        if cost is not None:  # beside the usage, in the journal and the trace
            data["cost_usd"] = node.data["cost_usd"] = cost
        # Journal the raw reply before anyone parses it: a crash after this line never pays
        # for the call again. The store checks the reply as it encodes it; one it cannot
        # carry (nothing of that write was stored) is journaled escaped instead.
        record = JournalRecord.trusted(node.key, "model", fingerprint, response.model, data)
        try:
            await self.journal.write(record)
        except JournalError:
            escaped = _escaped(data)
            if escaped is data:
                raise
            await self.journal.write(record.model_copy(update={"data": escaped}))
        self.spending.add_call(response.usage.input_tokens, response.usage.output_tokens, cost)
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
        fingerprint, replayed = self._journaled(node, menu, request)
        if replayed is not None:
            return replayed
        generation = self.journal.failures(key)
        if key == self.order.where:
            if self.order.pick is not None:
                return await self._human_pick(node, menu, fingerprint)
            if self.order.max_retries is not None:
                setattr(decide, "max_retries", self.order.max_retries)  # noqa: B010
        elif self.journal.caught(key):
            failure = self._replayed_failure(key, fingerprint, menu)
            node.data.update(replayed=True, attempts=failure.attempts, failures=[failure.kind])
            raise failure
        if self.probe:  # its model calls replay from the journal, or park
            return await decide(request)
        if generation:
            node.key = f"{key}@{generation}"  # a fresh ask: its calls get keys of their own
        try:
            pick = await decide(request)
            _check_pick(pick, node, menu.names)
        except DecisionError as exc:
            if exc.where is None:
                exc.where = key
                # What a person settling it reads: the run is stored with them.
                exc.menu, exc.prompt = describe_menu(menu), asked_prompt(request.messages, menu)
                await self.journal.write(failure_record(key, fingerprint, menu.names, exc))
            raise
        finally:
            node.key = key
        attempts, actor = int(node.data.get("attempts", 1)), _actor(node)
        node.data["actor"] = actor
        await self._write_pick(key, fingerprint, menu, pick, actor, attempts)
        return pick

    async def _human_pick(self, node: Node, menu: Menu, fingerprint: str) -> Pick:
        pick = check_human_pick(self.order.pick or {}, menu, node.key)
        if self.probe:
            raise ProbeDone
        node.data["attempts"], node.data["actor"] = 0, "human"
        await self._write_pick(node.key, fingerprint, menu, pick, "human", 0)
        return pick

    def _journaled(self, node: Node, menu: Menu, request: Request) -> tuple[str, Pick | None]:
        """The decision's fingerprint, and the pick its journal holds (replayed), if any."""
        fingerprint = digest(self._fingerprint(request), menu.text)
        record = self.journal.get("pick", node.key)
        if record is None:
            return fingerprint, None
        return fingerprint, _replay_pick(record, fingerprint, menu, node)

    def _replayed_failure(self, key: str, fingerprint: str, menu: Menu) -> DecisionError:
        record = self.journal.get("decision_failed", key)
        assert record is not None  # the journal says the failure at key was caught
        check_record(record, fingerprint, key, "the decision")
        data = record.data
        return DecisionError(
            data["kind"],
            data["detail"],
            replies=data.get("replies", []),
            attempts=data.get("attempts", 1),
            options=menu.names,
            where=key,
        )

    async def _write_pick(
        self, key: str, fingerprint: str, menu: Menu, pick: Pick, actor: str, attempts: int
    ) -> None:
        args = to_json(pick.args, what=f"the arguments of the pick at {key!r}")
        # The attempts and who picked travel with the pick, so a replay shows them as they were.
        data = {"call": pick.option.name, "args": args, "options": menu.names, "attempts": attempts}
        record = JournalRecord.trusted(key, "pick", fingerprint, actor, data)
        self.spending.counts.transitions += 1
        if actor == "human":
            await self.journal.write(record)
            return
        # A model's pick is re-derived from its journaled reply when lost, so it need not be
        # on disk before the flow moves on: it rides with the next write (same transaction,
        # same order) instead of costing a commit of its own.
        self.journal.ride(record)

    # -- steps ---------------------------------------------------------------------------------

    async def step(
        self, node: Node, fn: object, run: Callable[[], Awaitable[Any]], returns: object
    ) -> Any:
        """Return the journaled result of this step, or run it and journal its result."""
        fingerprint = digest(node.name)
        record = self.journal.get("step", node.key)
        if record is not None:
            check_record(record, fingerprint, node.key, f"the step {node.name!r}")
            node.data["replayed"] = True
            return from_json(record.data, returns, what=f"step {node.key!r}")
        if self.probe:
            where = self.order.where
            if where is None or not where.startswith(f"{node.key}/"):
                await _park()
            # The failing decision lies inside this unfinished step: go in to reach it.
            return await run()
        self.spending.check_live(node.key)
        result = await run()
        what = f"the result of step {node.name!r} at {node.key!r}"
        data = to_json(result, what=what)
        check_replayable(data, result, returns, what=what)
        await self.journal.write(JournalRecord.trusted(node.key, "step", fingerprint, None, data))
        self.spending.counts.transitions += 1
        return result


#: The key under which a model record keeps a reply JSON cannot carry, as ASCII JSON text.
_ESCAPED = "escaped_json"


def _escaped(data: dict[str, Any]) -> dict[str, Any]:
    """Return a reply's record data; one that JSON cannot carry as it is travels escaped.

    A reply is what the model said, paid for: one holding a lone surrogate (a provider's
    JSON can carry ``\\ud800`` as an escape) is kept whole as ASCII JSON text (Python's
    ``\\u`` escapes) rather than lost, so a replay parses the very same reply again.
    """
    if unencodable(data) is None:
        return data
    return {_ESCAPED: json.dumps(data)}


def _unescaped(data: Any) -> Any:
    if isinstance(data, dict) and set(data) == {_ESCAPED}:
        return json.loads(data[_ESCAPED])
    return data


def _check_pick(pick: Pick, node: Node, options: list[str]) -> None:
    """Refuse a model's pick whose arguments JSON cannot carry, before anything acts on it.

    The reply is at fault, not the flow: the decision fails as a bad pick would (``bad_args``),
    so the run is suspended and a resume asks the model afresh; its journaled reply stays.

    Raises:
        DecisionError: The pick's arguments hold a value JSON cannot carry.
    """
    problem = unencodable(pick.args)
    if problem is None:
        return
    heads = node.data.get("replies")
    raise DecisionError(
        "bad_args",
        f"the arguments of the pick {pick.option.name!r} hold {problem}, which JSON cannot "
        "carry; resume the run to ask the model again",
        replies=json_safe(list(heads)) if isinstance(heads, list) else [],
        attempts=int(node.data.get("attempts", 1)),
        options=options,
    )


def _replay_pick(record: JournalRecord, fingerprint: str, menu: Menu, node: Node) -> Pick:
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


async def _park() -> None:
    """Wait for good: a probe does no live work, but lets other branches go on replaying."""
    await anyio.sleep_forever()


def _actor(node: Node) -> str:
    """Who made a live pick: the model at once, a re-pick, or a decision policy's retry."""
    if node.data.get("retried"):
        return "retry"
    return "model" if int(node.data.get("attempts", 1)) == 1 else "repick"


def journal_hooks(
    run_id: str,
    store: Store,
    records: list[JournalRecord],
    *,
    owner: str | None = None,
    order: ResumeOrder | None = None,
    probe: bool = False,
    guard: Callable[[Model], Model] | None = None,
    budget: RunBudget | None = None,
    before: Run | None = None,
    prices: Mapping[str, Price] | None = None,
    control: Control | None = None,
    on_retry: OnRetry | None = None,
    clock: Clock | None = None,
) -> JournalHooks:
    """Build the hooks of one execution of ``run_id`` over its journal ``records``.

    ``before`` is the run as stored, for what earlier executions spent (tokens, dollars,
    retries); ``control`` says when the run must stop; the rest as :class:`JournalHooks` and
    :class:`~._spending.Spending` take them.
    """
    spending = Spending(
        records,
        budget=budget,
        tokens_before=before.usage.total_tokens if before is not None else 0,
        cost_before=before.cost_usd if before is not None else None,
        prices=prices,
        retries_before=before.retries if before is not None else None,
        control=control,
        on_retry=on_retry,
    )
    journal = Journal(run_id, store, records, owner=owner, ledger=spending.ledger)
    return JournalHooks(journal, spending, order=order, probe=probe, guard=guard, clock=clock)
