"""Process-wide helpers of batches: the collector's pacing while batches run, and run ids.

Both hold state for the whole process (every thread, every event loop), so they live apart
from the batch itself.
"""

from __future__ import annotations

import gc
import os
import threading

__all__ = [
    "GC_YOUNG_THRESHOLD",
    "PACING",
    "RUN_IDS",
    "CollectorPacing",
    "RunIds",
    "check_run_id",
]

#: The collector's youngest-generation threshold while a batch runs (CPython's is 700).
GC_YOUNG_THRESHOLD = 50_000


class CollectorPacing:
    """Raise the collector's youngest-generation threshold while any batch runs.

    Only ever raised, never lowered, and put back only when it is still the value set here:
    an application that tunes the collector itself keeps its own setting. Counted across
    threads, since each thread may run its own event loop with its own batches.
    """

    def __init__(self, young: int) -> None:
        self.young = young
        self._lock = threading.Lock()
        self._batches = 0
        self._saved: tuple[int, int, int] | None = None

    def enter(self) -> None:
        with self._lock:
            self._batches += 1
            if self._batches > 1:
                return
            saved = gc.get_threshold()
            if 0 < saved[0] < self.young:  # 0: automatic collection is off; leave it so
                gc.set_threshold(self.young, saved[1], saved[2])
                self._saved = saved

    def exit(self) -> None:
        with self._lock:
            self._batches -= 1
            if self._batches > 0 or self._saved is None:
                return
            saved, self._saved = self._saved, None
            if gc.get_threshold() == (self.young, saved[1], saved[2]):
                gc.set_threshold(*saved)


PACING = CollectorPacing(GC_YOUNG_THRESHOLD)


class RunIds:
    """Random run ids (uuid4, as hex), their random bytes drawn from the OS many at a time.

    A draw from the OS lets go of the GIL, and getting it back can wait on a store's worker
    thread: one draw per run costs far more than the id itself.
    """

    _DRAW = 256  # ids per draw

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pool = b""
        self._at = 0
        if hasattr(os, "register_at_fork"):  # a forked child must never reuse its parent's
            os.register_at_fork(after_in_child=self._forget)

    def _forget(self) -> None:
        self._pool, self._at = b"", 0

    def new(self) -> str:
        """Return a fresh random run id."""
        with self._lock:
            if self._at >= len(self._pool):
                self._pool, self._at = os.urandom(16 * self._DRAW), 0
            at = self._at
            self._at = at + 16
            chunk = bytearray(self._pool[at : at + 16])
        chunk[6] = (chunk[6] & 0x0F) | 0x40  # version 4
        chunk[8] = (chunk[8] & 0x3F) | 0x80  # the RFC 4122 variant
        return chunk.hex()


RUN_IDS = RunIds()


def check_run_id(run_id: object) -> None:
    """Refuse a run id that is not a non-empty string (one empty id would serve every run).

    Nor may it hold a lone surrogate or a NUL: no store can keep it, nor a terminal print it.
    """
    if not isinstance(run_id, str) or not run_id:
        raise ValueError(
            f"a run id must be a non-empty string, got {run_id!r} (leave run_id out for new ids)"
        )
    try:
        run_id.encode()
    except UnicodeEncodeError:
        raise ValueError(
            f"the run id {run_id!r} holds a lone surrogate, which no store can keep; use plain text"
        ) from None
    if "\0" in run_id:
        raise ValueError(f"the run id {run_id!r} holds a NUL character; use plain text")
