"""The texts a decision adds to the conversation: the finish instruction and the re-pick turn."""

from __future__ import annotations

__all__ = ["DECISION_FINISH_INSTRUCTION", "repick_text"]

DECISION_FINISH_INSTRUCTION = (
    "Do the work first: reason and use any tools you need. When you are done, end your reply "
    "with your decision: the last thing in your reply must be a single JSON object that picks "
    "exactly one of the options below, written in the format of that option's Call: line. "
    "Put nothing after it."
)

_TRUNCATED = (
    "Your reply was cut off by the length limit before the pick was complete, so no pick "
    "could be read."
)


def repick_text(kind: str, message: str, menu_text: str) -> str:
    """Return the user turn that asks the model to pick again after a failed reply."""
    problem = _TRUNCATED if kind == "truncated" else f"Your reply could not be used: {message}"
    return (
        f"{problem}\n\nPick exactly one of these options:\n\n{menu_text}\n"
        "Answer with JSON only: one object in the format of the chosen option's Call: line, "
        "and nothing else."
    )
