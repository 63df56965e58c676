"""The engine's side of people in the loop: answer a waiting run, settle passed deadlines.

A run whose flow asked a person (``decision.make(..., by="human")``, or a model's pick of an
option declared with ``approve=``) is stored ``waiting`` with its questions
(``run.error.questions``). :meth:`Answers.answer` checks the answer at the step it answers,
by the same rules as any pick and strictly, before anything changes; then the run goes on
from its journal where it stood, and nothing before it runs or is asked again.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from engine._base import Clock, Flow, RunConflictError, log
from engine._run._flows import flow_name
from engine._runtime import Approval
from engine.models import Model
from engine.store import Run, Store

if TYPE_CHECKING:
    from engine._run._runner import Runner

__all__ = ["Answers", "answer_approval"]


class Answers:
    """:class:`~engine.Engine`'s methods for runs that wait for a person."""

    _runner: Runner
    store: Store
    clock: Clock

    async def answer(
        self,
        run_id: str,
        pick: Mapping[str, Any] | None = None,
        *,
        approve: bool = False,
        edit: Mapping[str, Any] | None = None,
        reject: str | None = None,
        where: str | None = None,
        model: Model | str | None = None,
        flow: Flow | None = None,
    ) -> Run:
        """Answer a waiting run's question, and go on with the run; return it as it ended.

        A human decision is answered with ``pick`` (``{"call": ..., "args": {...}}``); the
        approval of a model's pick with ``approve=True``, ``edit=`` (its arguments, changed;
        the pick is then approved) or ``reject=`` (the reason). The answer is validated at
        the step it answers, by the same rules as any pick and strictly (an argument that
        is not a parameter is an error), and journaled as a person's; an invalid answer
        leaves the stored run exactly as it was. The run may wait again at its next
        question (another branch's, say).

        Args:
            run_id: The waiting run.
            pick: The person's pick, for a human decision.
            approve: Approve the model's pick as it is.
            edit: Approve the model's pick with these arguments instead (all of them).
            reject: Reject the model's pick, with the reason the model (or the log) is told.
            where: Which question, when the run waits at several (parallel branches): its
                key, or its decision's ``name=``.
            model: The model for this execution's live calls (the engine's otherwise).
            flow: The flow, when it cannot be found by its recorded name.

        Raises:
            RunNotFoundError: Unknown run id.
            ValueError: The run is not waiting; the answer does not fit the question, or
                names no open question; none or several of ``pick``/``approve``/``edit``/
                ``reject`` were given.
            DecisionError: The answer does not validate (``human_pick`` is set).
            RunConflictError: Another process answered or resumed it first.
        """
        approval = answer_approval(pick, approve, edit, reject)
        return await self._runner.answer(
            run_id, pick=pick, approval=approval, where=where, model=model, flow=flow
        )

    async def resume_expired(self, *, flows: Iterable[Flow] = ()) -> list[Run]:
        """Resume every waiting run with a question whose deadline passed, and return them.

        The passed deadline settles its human decision by the ``on_deadline`` the flow
        declared (an option, or the model); questions still within their time keep the
        run waiting. Runs another process takes first are left to it.
        """
        given = {flow_name(fn): fn for fn in flows}
        now = self.clock()
        done: list[Run] = []
        for run in await self.store.list_runs(status="waiting"):
            questions = run.error.questions if run.error is not None else None
            due = [
                q
                for q in questions or []
                if q.get("deadline_at") is not None and q["deadline_at"] <= now
            ]
            if not due:
                continue
            try:
                done.append(await self._runner.resume(run.run_id, flow=given.get(run.flow)))
            except (RunConflictError, LookupError) as exc:
                log.warning("resume_expired_skipped", run_id=run.run_id, reason=str(exc))
        return done


def answer_approval(
    pick: Mapping[str, Any] | None,
    approve: bool,
    edit: Mapping[str, Any] | None,
    reject: str | None,
) -> Approval | None:
    """Read an answer's arguments: the approval they give, or ``None`` for a ``pick``.

    Raises:
        ValueError: None or several of ``pick``/``approve``/``edit``/``reject`` were given.
        TypeError: ``edit`` is not a dict, or ``reject`` not a string.
    """
    given = [
        name
        for name, value in (
            ("pick", pick),
            ("approve", approve or None),
            ("edit", edit),
            ("reject", reject),
        )
        if value is not None
    ]
    if len(given) != 1:
        said = f" (got {', '.join(given)})" if given else ""
        raise ValueError(
            "answer with one of: pick= for a person's decision, or approve=True, edit={...} "
            f"or reject='reason' for the approval of a model's pick{said}"
        )
    if edit is not None:
        if not isinstance(edit, Mapping):
            raise TypeError(f"edit= takes the pick's arguments as a dict, got {edit!r}")
        return Approval("edit", dict(edit))
    if reject is not None:
        if not isinstance(reject, str):
            raise TypeError(f"reject= takes the reason as a string, got {reject!r}")
        return Approval("reject", None, reject)
    return Approval("approve") if approve else None
