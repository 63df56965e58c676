"""Properties of a described menu: JSON data, and an example pick that always validates.

Option sets are generated: schema options from the schema language (types, enums, nested
objects, lists) and function options with generated signatures (basic types, ``Literal``,
``Optional``, bounded ``Annotated`` types, Enums, pydantic models, dates, defaults, runtime
and hidden parameters).
"""

from __future__ import annotations

import datetime
import enum
import inspect
import json
import keyword
from typing import Annotated, Any, Literal

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field

from engine._decision import (
    AGENTIC_ATTR,
    RawPick,
    build_menu,
    describe_menu,
    example_pick,
    validate,
)

NAMES = st.text("abcdefghij_", min_size=1, max_size=8).filter(
    lambda n: n not in ("decision", "runtime", "secret") and not keyword.iskeyword(n)
)
SCALARS = st.sampled_from([str, int, float, bool, list, dict])
ENUM_VALUES = st.one_of(
    st.lists(st.text(max_size=5), min_size=1, max_size=4, unique=True),
    st.lists(st.integers(-5, 5), min_size=1, max_size=4, unique=True),
)


def schema_specs() -> st.SearchStrategy[object]:
    leaves = st.one_of(
        SCALARS,
        st.text(max_size=10),  # a described str field
        ENUM_VALUES.map(lambda values: {"options": values}),
        st.tuples(SCALARS, st.text(max_size=8)).map(
            lambda pair: {"type": pair[0], "description": pair[1]}
        ),
    )
    return st.recursive(
        leaves,
        lambda inner: st.one_of(
            inner.map(lambda spec: [spec]),
            st.dictionaries(NAMES, inner, min_size=1, max_size=3).filter(
                lambda d: not set(d) <= {"type", "description", "options", "fields", "items"}
            ),
            inner.map(lambda spec: {"items": spec}),
        ),
        max_leaves=6,
    )


class Tier(enum.Enum):
    GOLD = "gold"
    SILVER = "silver"


class Box(BaseModel):
    """A parcel."""

    width: Annotated[float, Field(gt=0)]
    label: Annotated[str, Field(min_length=3, max_length=4)]
    fragile: bool = False


ANNOTATIONS = st.sampled_from(
    [
        str,
        int,
        float,
        bool,
        list[int],
        list[str],
        int | None,
        Literal["low", "high"],
        Literal[1, 2, 3],
        list[Literal["a", "b"]],
        Annotated[int, Field(ge=5)],
        Annotated[int, Field(lt=-2)],
        Annotated[float, Field(gt=1.5, le=9)],
        Annotated[str, Field(min_length=8)],
        Annotated[str, Field(max_length=2)],
        Annotated[list[int], Field(min_length=2)],
        Tier,
        Box,
        Box | None,
        list[Box],
        dict[str, int],
        datetime.date,
        datetime.datetime,
        tuple[int, str],
    ]
)


@st.composite
def functions(draw: st.DrawFn) -> object:
    names = draw(st.lists(NAMES, min_size=0, max_size=4, unique=True))
    params = []
    hidden = {}
    for name in names:
        annotation = draw(ANNOTATIONS)
        default = inspect.Parameter.empty if draw(st.booleans()) else None
        params.append(
            inspect.Parameter(
                name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation
            )
        )
    if draw(st.booleans()):
        params.append(inspect.Parameter("runtime", inspect.Parameter.KEYWORD_ONLY, default=None))
    if draw(st.booleans()):
        params.append(inspect.Parameter("secret", inspect.Parameter.KEYWORD_ONLY))
        hidden["secret"] = {"hidden": True}

    def option(**kwargs: object) -> None:
        """A generated option."""

    option.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    setattr(option, AGENTIC_ATTR, {"input": hidden})
    return option


OPTION_SETS = st.dictionaries(
    NAMES,
    st.one_of(
        functions(),
        st.dictionaries(NAMES, schema_specs(), max_size=3).map(lambda s: ("Fill it.", s)),
        st.sampled_from(["DONE", None, 3, ("X", "a value")]),
    ),
    min_size=1,
    max_size=4,
)


@settings(max_examples=150, deadline=None)
@given(OPTION_SETS)
def test_example_pick_validates_against_its_menu(options: dict[str, Any]) -> None:
    menu = build_menu(options)
    described = describe_menu(options)
    assert [o["name"] for o in described] == menu.names
    for option in described:
        pick = example_pick(option)
        raw = RawPick(pick["call"], pick.get("args"), "args" in pick, {})
        validate(raw, menu, strict=True)  # raises Failure if the example were invalid


@settings(max_examples=150, deadline=None)
@given(OPTION_SETS)
def test_described_menu_is_json_data_and_hides_flow_parameters(options: dict[str, Any]) -> None:
    described = describe_menu(options)
    assert json.loads(json.dumps(described, allow_nan=False)) == described
    for option in described:
        names = {arg["name"] for arg in option["args"]}
        assert not names & {"runtime", "secret"}
        for arg in option["args"]:
            assert isinstance(arg["type"], str)
            assert isinstance(arg["required"], bool)
