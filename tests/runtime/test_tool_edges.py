"""Tool-loop edges: a choice never doubles as a tool, string arguments, blocking tools."""

from __future__ import annotations

import time

import anyio
import pytest
from test_tool_loop import ToolScript, calls, pick, tool_messages

from engine import DeadlineExceeded, Runtime, agentic_function

RAN: list[str] = []


async def refund(amount: float) -> str:
    """Refund the customer."""
    RAN.append(f"refund {amount}")
    return "refunded"


@pytest.fixture(autouse=True)
def _clear() -> None:
    RAN.clear()


async def test_tool_loop_withholds_a_choice_offered_under_another_name() -> None:
    model = ToolScript([pick("do_refund", amount=2.0)])

    result = await Runtime(model).exec(
        "Go.", tools=[refund], choices={"do_refund": refund, "close": "C"}
    )

    assert result == "refunded"
    assert model.requests[0].tools is None  # refund is the option: not also a tool
    assert RAN == ["refund 2.0"]


async def test_tool_loop_withholds_a_choice_renamed_by_agentic_function() -> None:
    @agentic_function(name="settle")
    async def settle_refund(amount: float) -> str:
        """Settle a refund."""
        RAN.append(f"settle {amount}")
        return "settled"

    async def note(text: str) -> str:
        """Take a note."""
        return "noted"

    model = ToolScript([pick("pay", amount=1.0)])
    await Runtime(model).exec("Go.", tools=[settle_refund, note], choices={"pay": settle_refund})

    offered = [t.name for t in model.requests[0].tools or []]
    assert offered == ["note"]


async def test_tool_loop_takes_arguments_sent_as_a_json_string() -> None:
    model = ToolScript([calls(("refund", '{"amount": 3.0}')), "done"])

    assert await Runtime(model).exec("Go.", tools=[refund]) == "done"

    assert RAN == ["refund 3.0"]
    assert tool_messages(model.requests[1])[0].text == "refunded"


@pytest.mark.parametrize(
    "tools", [refund, "refund", {"refund": refund}], ids=["function", "text", "dict"]
)
async def test_tool_loop_tools_that_are_not_a_list_are_a_type_error(tools: object) -> None:
    model = ToolScript(["never"])

    with pytest.raises(TypeError, match="tools must be a list of functions"):
        await Runtime(model).exec("Go.", tools=tools)  # type: ignore[arg-type]

    assert model.requests == []


async def test_tool_loop_deadline_does_not_wait_for_a_blocking_tool() -> None:
    def slow(x: int) -> int:
        """Block for a while."""
        time.sleep(0.5)
        return x

    model = ToolScript([calls(("slow", {"x": 1})), "done"])
    started = time.monotonic()
    with anyio.fail_after(5), pytest.raises(DeadlineExceeded):
        await Runtime(model).exec("Go.", tools=[slow], timeout_s=0.1)

    assert time.monotonic() - started < 0.45  # generous: the tool alone takes 0.5 s


@pytest.mark.parametrize("max_iterations", [0, True, 2.0], ids=["zero", "bool", "float"])
async def test_exec_max_iterations_that_is_not_a_count_raises_before_any_call(
    max_iterations: object,
) -> None:
    model = ToolScript(["never"])

    with pytest.raises(ValueError, match="max_iterations must be an integer"):
        await Runtime(model).exec("Go.", max_iterations=max_iterations)  # type: ignore[arg-type]

    assert model.requests == []
