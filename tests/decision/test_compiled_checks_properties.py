"""Validation with each option's compiled field checks agrees with checking every field."""

from __future__ import annotations

import json
from typing import Any, Literal

from hypothesis import given, settings
from hypothesis import strategies as st

from engine._decision import Failure, build_menu, find_pick, validate
from engine._decision._check import FieldError, check
from engine._decision._numbers import OutOfRange


async def pay(
    amount: float,
    count: int,
    note: str,
    flag: bool,
    level: Literal["low", "high"] = "low",
    limit: int | None = None,
    ratio: float = 1.0,
) -> None:
    """Pay."""


OPTIONS: dict[str, object] = {
    "pay": pay,
    "plan": ("Plan.", {"steps": [str], "size": int, "rate": float, "done": bool, "why": "why"}),
}
MENU = build_menu(OPTIONS)

values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=5),
    st.sampled_from(["low", "high", 1e400, 10**700]),
    st.lists(st.text(max_size=3), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)
names = st.sampled_from(
    [
        "amount",
        "count",
        "note",
        "flag",
        "level",
        "limit",
        "ratio",
        "steps",
        "size",
        "rate",
        "done",
        "why",
        "other",
    ]
)


def reference(option_name: str, args: dict[str, Any]) -> tuple[str, object]:
    """Validate every field the long way (what validation did before compiled checks)."""
    option = MENU.by_name[option_name]
    if not option.required <= args.keys():
        return ("fail", "missing_required")
    out: dict[str, Any] = {}
    try:
        for p in option.fields:
            if p.name not in args:
                continue
            value = args[p.name]
            if value is None and option.kind == "function" and p.has_default:
                continue
            out[p.name] = check(p.spec, value, p.name)
    except FieldError as exc:
        return ("fail", f"{exc.kind}: {option.name!r}: {exc}")
    return ("ok", out)


def compiled(option_name: str, args: dict[str, Any]) -> tuple[str, object]:
    reply = json.dumps({"call": option_name, "args": args}, default=str)
    raw = find_pick(reply, MENU.by_name)
    assert raw is not None
    raw = raw._replace(args=args)  # the values themselves, OutOfRange and all
    try:
        pick = validate(raw, MENU)
    except Failure as failure:
        if failure.kind == "missing_required":
            return ("fail", "missing_required")
        return ("fail", f"{failure.kind}: {failure.message}")
    return ("ok", pick.args)


def _out_of_range(value: object) -> object:
    if value == 1e400:
        return OutOfRange("1e400")
    if value == 10**700:
        return OutOfRange("1" + "0" * 700)
    return value


VALID: dict[str, dict[str, Any]] = {
    "pay": {"amount": 2, "count": 3, "note": "n", "flag": True, "level": "high", "ratio": 0.5},
    "plan": {"steps": ["a"], "size": 1, "rate": 2, "done": False, "why": "w"},
}


@settings(max_examples=500, deadline=None)
@given(
    option=st.sampled_from(["pay", "plan"]),
    changes=st.dictionaries(names, values.map(_out_of_range), max_size=3),
    dropped=st.sets(names, max_size=2),
)
def test_compiled_checks_agree_with_checking_every_field(
    option: str, changes: dict[str, Any], dropped: set[str]
) -> None:
    args = {k: v for k, v in {**VALID[option], **changes}.items() if k not in dropped}
    expected = reference(option, args)
    got = compiled(option, args)
    assert got == expected
    if got[0] == "ok":  # an int sent for a float field comes back a float, as before
        assert {k: type(v) for k, v in got[1].items()} == {  # type: ignore[union-attr]
            k: type(v)
            for k, v in expected[1].items()  # type: ignore[union-attr]
        }
