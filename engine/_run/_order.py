"""What a resume asks of a run's journal: the decision it stopped at, and how to settle it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from engine._retries import RetryEvent
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
