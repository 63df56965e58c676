"""Runs on many worker processes: submit them to PostgreSQL, execute them with ``worker``.

procrastinate dispatches one job per run; the :class:`~engine.store.PostgresStore` journal
in the same database lets any worker resume a run another one started, and
``request_answer`` lets a person answer a waiting run from any machine. See
``docs/postgres.md``. Needs the ``postgres`` extra (``pip install -e ".[postgres]"``).
"""

from engine._run import DEFAULT_QUEUE, TASK, request_answer, request_resume, submit
from engine._workers import worker

__all__ = ["DEFAULT_QUEUE", "TASK", "request_answer", "request_resume", "submit", "worker"]
