"""What a resume asks of a run's journal: the decision it stopped at, and how to settle it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from engine._retries import RetryEvent
from engine._runtime import Approval
from engine.models import Model
from engine.store import Run

__all__ = ["ProbeDone", "ResumeOrder"]


@dataclass(frozen=True, slots=True)
class ResumeOrder:
    """How a resume treats the decision that stopped the run."""

    where: str | None = None
    pick: Mapping[str, Any] | None = None
    model: Model | None = None
    max_retries: int | None = None
    #: The run-level retry (layer 4) this execution is, when a run policy resumed it.
    retry: RetryEvent | None = None
    #: A person's answer to the approval of the pick at ``where`` (a waiting run's).
    approval: Approval | None = None

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
        if run.status == "waiting" and error is not None and error.questions:
            if pick is None:  # no answer: whatever passed its deadline settles, the rest waits
                return cls(None, None, model, max_retries, retry)
            return cls.answering(run, pick=pick, model=model, max_retries=max_retries)
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

    @classmethod
    def answering(
        cls,
        run: Run,
        *,
        pick: Mapping[str, Any] | None = None,
        approval: Approval | None = None,
        where: str | None = None,
        model: Model | None = None,
        max_retries: int | None = None,
    ) -> ResumeOrder:
        """Return the order of a resume that answers one of a waiting run's questions.

        Raises:
            TypeError: ``pick`` is not a mapping.
            ValueError: The run is not waiting; ``where`` names no open question, or none
                is named where several are open; the answer does not fit the question (a
                pick for an approval, an approval for a person's decision).
        """
        if pick is not None and not isinstance(pick, Mapping):
            raise TypeError(
                f'pick= must be a dict such as {{"call": "name", "args": {{...}}}}, got {pick!r}'
            )
        error = run.error
        questions = error.questions if run.status == "waiting" and error is not None else None
        if not questions:
            raise ValueError(
                f"run {run.run_id!r} is {run.status}, not waiting for an answer; "
                "only a waiting run can be answered"
            )
        question = _question(run.run_id, questions, where)
        kind = question.get("kind")
        if kind == "approval" and approval is None:
            raise ValueError(
                f"run {run.run_id!r} waits at {question['where']!r} for the approval of the "
                f"model's pick {question.get('pick')}: approve it, edit its arguments or "
                "reject it, instead of giving a pick"
            )
        if kind != "approval" and pick is None:
            raise ValueError(
                f"run {run.run_id!r} waits at {question['where']!r} for a person's pick "
                f'among {question.get("options")}: give pick= {{"call": ..., "args": ...}}'
            )
        return cls(question["where"], pick, model, max_retries, None, approval)


def _question(run_id: str, questions: list[dict[str, Any]], where: str | None) -> dict[str, Any]:
    """The open question ``where`` names (its key, or its decision's name), or the only one."""
    if where is None:
        if len(questions) == 1:
            return questions[0]
        raise ValueError(
            f"run {run_id!r} waits at {len(questions)} steps: say which one to answer with "
            f"where= (one of {', '.join(repr(q['where']) for q in questions)})"
        )
    found = [q for q in questions if where in (q.get("where"), q.get("name"))]
    if len(found) == 1:
        return found[0]
    open_ = ", ".join(f"{q['where']!r} ({q.get('name')})" for q in questions)
    if found:
        raise ValueError(f"where={where!r} names several open questions; use a key: {open_}")
    raise ValueError(f"run {run_id!r} has no open question at {where!r}; it waits at: {open_}")


class ProbeDone(Exception):
    """Raised by a probe replay once the human pick validated at the failing decision."""
