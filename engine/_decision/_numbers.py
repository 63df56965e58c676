"""Numbers a reply writes that no Python number holds, kept as bad arguments, not as no pick.

JSON writes numbers of any size, but a float holds at most about ``1.8e308`` and Python reads
integers of at most ``sys.get_int_max_str_digits()`` digits (4,300 by default). A pick holding
such a number (``{"amount": 1E1161806064188723}``) is still a pick: the number is read as an
:class:`OutOfRange`, which no field's type accepts, so validation reports a ``type_mismatch``
naming the field's path (docs/decisions.md §7) and the re-pick tells the model which field to
fix. Reading stays linear: each number's text is looked at once, and an integer is converted
only below the digit limit.
"""

from __future__ import annotations

import math
import sys
from typing import Any

__all__ = ["OutOfRange", "find_out_of_range", "parse_float", "parse_int", "replace_infinite"]

_HEAD = 40


class OutOfRange:
    """A number of a reply that no float (or, for an integer, no readable int) can hold.

    Attributes:
        text: The number as the reply wrote it.
    """

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return f"OutOfRange({self.head!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OutOfRange) and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)

    @property
    def head(self) -> str:
        """The number's text, cut to a readable length."""
        text = self.text
        return text if len(text) <= _HEAD else f"{text[:_HEAD]}…"

    def describe(self) -> str:
        """Say what the number is, for a failure message."""
        digits = self.text.lstrip("-")
        if digits.isdigit():
            return f"an integer of {len(digits)} digits, too long to read"
        return f"{self.head}, a number out of a float's range"


def parse_float(text: str) -> float | OutOfRange:
    """Read a JSON number with a fraction or an exponent; one no float holds is out of range."""
    value = float(text)
    return OutOfRange(text) if math.isinf(value) else value


def parse_int(text: str) -> int | OutOfRange:
    """Read a JSON integer; one of more digits than Python reads is out of range."""
    # Checked before int() is asked: its own refusal comes after a scan of the whole text.
    if len(text) - (text[:1] == "-") > sys.get_int_max_str_digits() > 0:
        return OutOfRange(text)
    return int(text)


def find_out_of_range(value: object, path: str) -> tuple[str, OutOfRange] | None:
    """Return the path and the first out-of-range number inside ``value``, or ``None``.

    Paths are written as validation writes them (``items[0].price``). Walked without
    recursion, so any depth is answered.
    """
    todo: list[tuple[object, str]] = [(value, path)]
    while todo:
        item, where = todo.pop()
        if type(item) is OutOfRange:
            return where, item
        if isinstance(item, dict):
            todo.extend((v, f"{where}.{k}") for k, v in reversed(item.items()))
        elif isinstance(item, list):
            todo.extend((v, f"{where}[{i}]") for i, v in reversed(list(enumerate(item))))
    return None


def replace_infinite(value: dict[str, object]) -> dict[str, object]:
    """Replace, in place, the infinite floats of a Python-literal object by :class:`OutOfRange`.

    ``ast.literal_eval`` reads ``1e999`` as infinity; JSON reading keeps it as out of range,
    and so does this.
    """
    todo: list[dict[Any, object] | list[object]] = [value]
    while todo:
        item = todo.pop()
        pairs = list(item.items() if isinstance(item, dict) else enumerate(item))
        for key, member in pairs:
            if type(member) is float and math.isinf(member):
                item[key] = OutOfRange(repr(member))
            elif isinstance(member, dict | list):
                todo.append(member)
    return value
