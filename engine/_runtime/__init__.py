"""The runtime: model turns, decisions with re-picks, the tool loop and resolution.

:class:`Runtime` is what ``runtime.exec`` and ``decision.make`` run on. Every model call,
decision and step goes through the ambient :class:`Hooks` (the seam the run engine journals
through); model calls with their transport retries are :mod:`._calls`'; a failed pick is asked
again by :mod:`._repick`; a pick becomes the next step's result in :mod:`._resolve`.
``@agentic_function`` and the branch helpers (:func:`gather`, :func:`map`) live here too.
"""

from engine._runtime._agentic import agentic_function
from engine._runtime._branches import gather, map
from engine._runtime._hooks import Hooks, current_hooks
from engine._runtime._requests import build_request
from engine._runtime._resolve import call_option, resolve
from engine._runtime._runtime import Runtime, check_timeout

__all__ = [
    "Hooks",
    "Runtime",
    "agentic_function",
    "build_request",
    "call_option",
    "check_timeout",
    "current_hooks",
    "gather",
    "map",
    "resolve",
]
