"""A model's token prices, and money as the engine keeps it.

Money is a ``float`` of US dollars, rounded to nine decimals (a billionth of a dollar): a
JSON number in the journal, the trace and the stored run, summed without a ``Decimal`` to
carry around. An unknown cost is ``None``, never ``0``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

__all__ = ["DIGITS", "Price", "add_cost", "check_price"]

#: Money is kept to a billionth of a dollar.
DIGITS = 9
_PART = re.compile(r"^\s*(in|input|out|output)\s*=\s*([^=,\s]+)\s*$")


@dataclass(frozen=True, slots=True)
class Price:
    """Token prices of one model, in US dollars per million tokens.

    Args:
        input_per_mtok: Dollars per million input (prompt) tokens.
        output_per_mtok: Dollars per million output (completion) tokens.

    Example: ``Price(input_per_mtok=0.15, output_per_mtok=0.60)``, or on the command line
    ``--price in=0.15,out=0.60``.
    """

    input_per_mtok: float
    output_per_mtok: float

    def __post_init__(self) -> None:
        for name in ("input_per_mtok", "output_per_mtok"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise TypeError(f"Price({name}={value!r}) must be a number of dollars")
            if not math.isfinite(value) or value < 0:
                raise ValueError(f"Price({name}={value!r}) must be a finite number >= 0")

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        """Return what ``input_tokens`` and ``output_tokens`` cost, in dollars."""
        total = input_tokens * self.input_per_mtok + output_tokens * self.output_per_mtok
        return round(total / 1_000_000, DIGITS)

    @classmethod
    def parse(cls, text: str) -> Price:
        """Read ``"in=0.15,out=0.60"`` (dollars per million input and output tokens).

        Raises:
            ValueError: A part is missing, unknown, repeated or not a number.
        """
        found: dict[str, float] = {}
        for part in text.split(","):
            match = _PART.match(part)
            if match is None:
                raise ValueError(
                    f"price {text!r}: write in=<dollars>,out=<dollars> per million tokens, "
                    "as in in=0.15,out=0.60"
                )
            side = "in" if match.group(1).startswith("in") else "out"
            if side in found:
                raise ValueError(f"price {text!r} gives {side}= twice")
            try:
                found[side] = float(match.group(2))
            except ValueError:
                raise ValueError(
                    f"price {text!r}: {match.group(2)!r} is not a number of dollars"
                ) from None
        missing = [side for side in ("in", "out") if side not in found]
        if missing:
            raise ValueError(f"price {text!r} gives no {'= nor '.join(missing)}=; write both")
        return cls(input_per_mtok=found["in"], output_per_mtok=found["out"])


def check_price(price: Price | None) -> Price | None:
    """Return ``price`` (a model's ``price=``) when it is a :class:`Price` or ``None``.

    Raises:
        TypeError: It is anything else.
    """
    if price is not None and not isinstance(price, Price):
        raise TypeError(
            f"price must be a Price, as in Price(input_per_mtok=0.15, output_per_mtok=0.60); "
            f"got {price!r}"
        )
    return price


def add_cost(a: float | None, b: float | None) -> float | None:
    """Add two costs, either unknown (``None``); unknown only when both are."""
    if a is None:
        return b
    if b is None:
        return a
    return round(a + b, DIGITS)
