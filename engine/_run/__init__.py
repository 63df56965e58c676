"""The run engine: durable runs, their journal, leases, batches, and the queue for workers.

:class:`Engine` is the public face of the run engine: it creates runs, executes them through
the executor (claim, journaled execution, outcome), resumes them from their journals, and runs
many at once as a :class:`Batch`. The run state machine (statuses, their groups and the
allowed transitions) is :mod:`._status`. :func:`submit` queues runs for the workers of
:mod:`engine._workers`, with their procrastinate jobs (:mod:`._queue`).
"""

from engine._run._batch import Batch, BatchProgress
from engine._run._engine import Engine
from engine._run._flows import FLOWS, encode_input
from engine._run._leases import lease_expired, unfinished_runs
from engine._run._pacing import check_run_id
from engine._run._queue import (
    TASK,
    Busy,
    queue_app,
    requeue_stalled,
    retry_policy,
    stop_when_idle,
)
from engine._run._submit import DEFAULT_QUEUE, postgres, request_answer, request_resume, submit

__all__ = [
    "DEFAULT_QUEUE",
    "FLOWS",
    "TASK",
    "Batch",
    "BatchProgress",
    "Busy",
    "Engine",
    "check_run_id",
    "encode_input",
    "lease_expired",
    "postgres",
    "queue_app",
    "request_answer",
    "request_resume",
    "requeue_stalled",
    "retry_policy",
    "stop_when_idle",
    "submit",
    "unfinished_runs",
]
