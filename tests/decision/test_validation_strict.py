"""docs/decisions.md §7: a person's pick is strict where a model's is lenient."""

from __future__ import annotations

from typing import Any

import pytest

from engine import agentic_function
from engine._decision import Failure, RawPick, build_menu, validate


@agentic_function(input={"account": {"hidden": True}})
async def classify(severity: str, note: str = "", account: str = "", runtime: object = None) -> str:
    """Classify the ticket."""
    return severity


async def tag(label: str, **extra: object) -> str:
    """Tag the ticket."""
    return label


OPTIONS: dict[str, object] = {
    "classify": classify,
    "tag": tag,
    "plan": ("Plan it", {"title": str}),
    "close": "CLOSED",
}
MENU = build_menu(OPTIONS)


def check(call: str, args: dict[str, Any], *, strict: bool) -> dict[str, Any]:
    return validate(RawPick(call, args, True, {}), MENU, strict=strict).args


def refused(call: str, args: dict[str, Any]) -> Failure:
    with pytest.raises(Failure) as info:
        check(call, args, strict=True)
    return info.value


def test_strict_unknown_argument_is_named() -> None:
    failure = refused("classify", {"severty": "high"})
    assert (failure.kind, failure.message) == (
        "bad_args",
        "unknown argument 'severty' for option 'classify'; its arguments are: severity, note",
    )
    # The model's pick keeps the rule of dropping what is not a parameter.
    with pytest.raises(Failure, match="missing required argument"):
        check("classify", {"severty": "high"}, strict=False)
    assert check("classify", {"severity": "high", "severty": "x"}, strict=False) == {
        "severity": "high"
    }


@pytest.mark.parametrize("name", ["account", "runtime"], ids=["hidden", "runtime"])
def test_strict_flow_parameters_cannot_be_set_by_a_person(name: str) -> None:
    failure = refused("classify", {"severity": "high", name: "x"})
    assert failure.kind == "bad_args"
    assert failure.message == (
        f"argument {name!r} of option 'classify' is filled by the flow, not by a pick; "
        "its arguments are: severity, note"
    )
    assert check("classify", {"severity": "high", name: "x"}, strict=False) == {"severity": "high"}


def test_strict_schema_and_value_options() -> None:
    assert refused("plan", {"title": "t", "owner": "me"}).message == (
        "unknown argument 'owner' for option 'plan'; its arguments are: title"
    )
    assert refused("close", {"why": "done"}).message == (
        "unknown argument 'why' for option 'close'; it takes no arguments"
    )
    assert check("plan", {"title": "t", "owner": "me"}, strict=False) == {"title": "t"}
    assert check("close", {"why": "done"}, strict=False) == {}


def test_strict_keeps_what_a_function_with_var_keyword_takes() -> None:
    assert check("tag", {"label": "vip", "colour": "red"}, strict=True) == {
        "label": "vip",
        "colour": "red",
    }
    with pytest.raises(Failure, match="'runtime' of option 'tag' is filled by the flow"):
        check("tag", {"label": "vip", "runtime": 1}, strict=True)


def test_strict_valid_picks_pass_unchanged() -> None:
    assert check("classify", {"severity": "high", "note": "vip"}, strict=True) == {
        "severity": "high",
        "note": "vip",
    }
    assert check("close", {}, strict=True) == {}
