"""Workers: execute queued runs from PostgreSQL on many processes and machines.

The runs are queued by the run engine (:func:`engine._run.submit`); a worker takes their
procrastinate jobs and executes them through an :class:`~engine.Engine`.
"""

from engine._workers._worker import worker

__all__ = ["worker"]
