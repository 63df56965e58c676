"""The runtime: model turns, decisions with re-picks, the tool loop and resolution.

:class:`Runtime` is what ``runtime.exec`` and ``decision.make`` run on. Every model call,
decision and step goes through the ambient :class:`Hooks` (the seam the run engine journals
through); model calls with their transport retries are :mod:`._calls`'; a failed pick is asked
again by :mod:`._repick`; a pick becomes the next step's result in :mod:`._resolve`.
A person's pick or approval is asked in :mod:`._human`. ``@agentic_function`` and the
branch helpers (:func:`gather`, :func:`map`) live here too.
"""

from engine._runtime._agentic import agentic_function
from engine._runtime._branches import gather, map
from engine._runtime._deadline import check_timeout
from engine._runtime._hooks import Hooks, current_hooks
from engine._runtime._human import approval_rule, check_on_deadline, check_on_reject
from engine._runtime._questions import MODEL, Approval, HumanAsk, Question
from engine._runtime._replies import note_settings
from engine._runtime._requests import build_request, menu_block
from engine._runtime._resolve import call_option, resolve
from engine._runtime._runtime import Runtime

__all__ = [
    "MODEL",
    "Approval",
    "Hooks",
    "HumanAsk",
    "Question",
    "Runtime",
    "agentic_function",
    "approval_rule",
    "build_request",
    "call_option",
    "check_on_deadline",
    "check_on_reject",
    "check_timeout",
    "current_hooks",
    "gather",
    "map",
    "menu_block",
    "note_settings",
    "resolve",
]
