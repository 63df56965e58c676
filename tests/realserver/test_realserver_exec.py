"""An ``exec`` turn with a tool against llama-cpp-python's server and llama-server.

The model may call the tool or not (llama-server's tiny model mostly does; llama-cpp-python's
server never makes a tool call unless one is forced). The turn is enforced only at its
closing pick, so the tools stay callable: it ends with a pick, a decision error of a true
kind, or (a model that only ever calls tools) ``MaxIterationsError``; never a provider error.
"""

from __future__ import annotations

from typing import Any

from realserver_support import RealServer, check_decision_error, model_calls

from engine import DecisionError, MaxIterationsError, Runtime
from engine.models import ModelSettings, OpenAIModel


async def test_an_exec_turn_with_a_tool_ends_with_a_pick_or_a_true_error(
    server: RealServer,
) -> None:
    looked_up: list[Any] = []

    async def order_status(order_id: str) -> dict[str, str]:
        """Look up an order's shipping status."""
        looked_up.append(order_id)
        return {"order_id": order_id, "status": "in transit"}

    outcomes: list[str] = []
    model = OpenAIModel("tiny", base_url=server.url, enforce=server.mode)
    async with model:
        runtime = Runtime(model, settings=ModelSettings(max_tokens=96))
        for n in range(4):
            try:
                picked = await runtime.exec(
                    f"Order A-{n} has not arrived. Check it, then decide.",
                    tools=[order_status],
                    choices=["wait", "refund", "escalate"],
                    max_iterations=4,
                )
            except DecisionError as exc:
                check_decision_error(exc)
                outcomes.append(exc.kind)
            except MaxIterationsError:
                outcomes.append("max_iterations")
            else:
                assert picked in ("wait", "refund", "escalate")
                outcomes.append("pick")

    assert len(outcomes) == 4
    calls = model_calls(runtime)
    assert all(c["status"] == "ok" for c in calls), calls
    tool_nodes = [n for n in runtime.trace.to_dict()["nodes"] if n["kind"] == "tool_call"]
    # Every tool call the model made ran (or was refused for its arguments) as a node.
    assert len(tool_nodes) >= len(looked_up)
    assert all(isinstance(order, str) for order in looked_up)
