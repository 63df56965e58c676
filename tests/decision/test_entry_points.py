"""docs/decisions.md §1: two entry points, one resolver."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from engine import DecisionError, Runtime, decision
from engine.decision import DECISION_FINISH_INSTRUCTION
from engine.models import ScriptedModel, TextBlock

Entry = Callable[..., Awaitable[Any]]

OPTIONS: dict[str, object] = {"approve": "APPROVED", "reject": "REJECTED"}
MENU = decision.render_options(OPTIONS)


def pick(call: str, **args: object) -> str:
    return json.dumps({"call": call, "args": args})


async def via_make(runtime: Runtime, options: object, **kwargs: Any) -> Any:
    return await decision.make("Pick one.", options, runtime=runtime, **kwargs)


async def via_exec(runtime: Runtime, options: object, **kwargs: Any) -> Any:
    return await runtime.exec("Review the change.", choices=options, **kwargs)


ENTRIES = [pytest.param(via_make, id="make"), pytest.param(via_exec, id="exec")]


async def test_make_request_is_one_user_message_prompt_blank_line_menu() -> None:
    model = ScriptedModel([pick("approve")])

    result = await decision.make("Approve or reject?", OPTIONS, runtime=Runtime(model))

    assert result == "APPROVED"
    [request] = model.requests
    [message] = request.messages
    assert message.role == "user"
    assert message.text == f"Approve or reject?\n\n{MENU}"


async def test_make_adds_no_finish_instruction() -> None:
    model = ScriptedModel([pick("approve")])

    await decision.make("Approve or reject?", OPTIONS, runtime=Runtime(model))

    assert DECISION_FINISH_INSTRUCTION not in model.requests[0].messages[0].text


async def test_exec_choices_appends_one_block_instruction_then_menu() -> None:
    model = ScriptedModel(["Looks fine to me.\n" + pick("approve")])

    result = await Runtime(model).exec("Review the change.", choices=OPTIONS)

    assert result == "APPROVED"
    [message] = model.requests[0].messages
    assert message.role == "user"
    assert [block.text for block in message.content if isinstance(block, TextBlock)] == [
        "Review the change.",
        f"{DECISION_FINISH_INSTRUCTION}\n\n{MENU}",
    ]


async def test_exec_choices_keeps_caller_blocks_in_order() -> None:
    model = ScriptedModel([pick("reject")])
    content = [TextBlock(text="first"), TextBlock(text="second")]

    await Runtime(model).exec(content, choices=OPTIONS)

    texts = [b.text for b in model.requests[0].messages[0].content if isinstance(b, TextBlock)]
    assert texts == ["first", "second", f"{DECISION_FINISH_INSTRUCTION}\n\n{MENU}"]


@pytest.mark.parametrize(
    "needle",
    ["work first", "last thing", "single JSON object", "exactly one", "Call:"],
    ids=["work-first", "last", "one-json-object", "exactly-one", "call-format"],
)
def test_finish_instruction_says_work_first_then_one_json_pick(needle: str) -> None:
    assert needle.lower() in DECISION_FINISH_INSTRUCTION.lower()


async def test_exec_without_choices_returns_reply_text() -> None:
    model = ScriptedModel(['Here is my answer: {"call": "approve"}'])

    result = await Runtime(model).exec("Summarise the change.")

    assert result == 'Here is my answer: {"call": "approve"}'
    [message] = model.requests[0].messages
    assert message.text == "Summarise the change."
    assert model.requests[0].choices is None


@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize(
    "options",
    [
        pytest.param("approve", id="string"),
        pytest.param(42, id="int"),
        pytest.param({"approve", "reject"}, id="set"),
        pytest.param({1: "one"}, id="non-string-key"),
        pytest.param([()], id="empty-tuple-item"),
        pytest.param([3.5], id="bad-item"),
    ],
)
async def test_entry_bad_options_raise_type_error_before_any_call(
    entry: Entry, options: object
) -> None:
    model = ScriptedModel([pick("approve")])

    with pytest.raises(TypeError, match="option"):
        await entry(Runtime(model), options)

    assert model.calls == 0


@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize("options", [{}, [], ()], ids=["dict", "list", "tuple"])
async def test_entry_empty_options_raise_value_error_before_any_call(
    entry: Entry, options: object
) -> None:
    model = ScriptedModel([pick("approve")])

    with pytest.raises(ValueError, match="empty"):
        await entry(Runtime(model), options)

    assert model.calls == 0


async def test_make_bad_options_raise_before_the_missing_runtime_is_noticed() -> None:
    with pytest.raises(TypeError, match="options must be a dict or list"):
        await decision.make("Pick one.", "approve")


@pytest.mark.parametrize("entry", ENTRIES)
async def test_entry_max_retries_defaults_to_one(entry: Entry) -> None:
    model = ScriptedModel(["no idea", "still no idea"])

    with pytest.raises(DecisionError) as info:
        await entry(Runtime(model), OPTIONS)

    assert (info.value.attempts, model.calls) == (2, 2)


@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize("max_retries", [0, 1, 3], ids=["disabled", "one", "three"])
async def test_entry_max_retries_sets_the_number_of_repicks(entry: Entry, max_retries: int) -> None:
    model = ScriptedModel(["no idea"] * (max_retries + 1))

    with pytest.raises(DecisionError) as info:
        await entry(Runtime(model), OPTIONS, max_retries=max_retries)

    assert (info.value.attempts, model.calls) == (max_retries + 1, max_retries + 1)


@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize("max_retries", [-1, -5], ids=["minus-one", "minus-five"])
async def test_entry_negative_max_retries_raise_value_error_before_any_call(
    entry: Entry, max_retries: int
) -> None:
    model = ScriptedModel([pick("approve")])

    with pytest.raises(ValueError, match="max_retries"):
        await entry(Runtime(model), OPTIONS, max_retries=max_retries)

    assert model.calls == 0


@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize("max_retries", [True, 1.0, "1"], ids=["true", "float", "text"])
async def test_entry_max_retries_that_is_not_an_integer_raises_before_any_call(
    entry: Entry, max_retries: object
) -> None:
    model = ScriptedModel([pick("approve")])

    with pytest.raises(ValueError, match="max_retries must be an integer"):
        await entry(Runtime(model), OPTIONS, max_retries=max_retries)

    assert model.calls == 0


async def test_exec_without_choices_rejects_negative_max_retries() -> None:
    model = ScriptedModel(["text"])

    with pytest.raises(ValueError, match="max_retries"):
        await Runtime(model).exec("Hello.", max_retries=-1)

    assert model.calls == 0


@pytest.mark.parametrize("entry", ENTRIES)
async def test_entry_offers_no_native_tools(entry: Entry) -> None:
    async def approve(note: str) -> str:
        """Approve the change."""
        return note

    model = ScriptedModel([pick("approve", note="ok")])

    assert await entry(Runtime(model), [approve]) == "ok"
    assert model.requests[0].tools is None


@pytest.mark.parametrize("entry", ENTRIES)
async def test_entry_passes_the_menu_as_choices_beside_the_text(entry: Entry) -> None:
    model = ScriptedModel([pick("reject")])

    await entry(Runtime(model), OPTIONS)

    choices = model.requests[0].choices
    assert choices is not None
    assert [c.name for c in choices] == ["approve", "reject"]


@pytest.mark.parametrize("entry", ENTRIES)
async def test_entry_resolves_the_same_reply_the_same_way(entry: Entry) -> None:
    async def double(n: int) -> int:
        return 2 * n

    options = {"double": double, "stop": None, "plan": ("A plan.", {"title": str})}
    replies = [pick("double", n=4), pick("stop"), pick("plan", title="t")]
    model = ScriptedModel(replies)
    runtime = Runtime(model)

    results = [await entry(runtime, options) for _ in replies]

    assert results == [8, None, {"decision": "plan", "title": "t"}]


async def test_make_puts_the_runtime_system_prompt_first() -> None:
    model = ScriptedModel([pick("approve")])

    await decision.make("Pick one.", OPTIONS, runtime=Runtime(model, system="Be brief."))

    roles = [(m.role, m.text) for m in model.requests[0].messages]
    assert roles == [("system", "Be brief."), ("user", f"Pick one.\n\n{MENU}")]


@pytest.mark.parametrize(
    "content",
    [
        pytest.param([{"type": "text", "text": "Review."}], id="dict-block"),
        pytest.param(["Review."], id="string-item"),
        pytest.param([TextBlock(text="Review.")], id="text-block"),
    ],
)
async def test_exec_accepts_every_content_block_form(content: list[object]) -> None:
    model = ScriptedModel([pick("approve"), "text"])
    runtime = Runtime(model)

    assert await runtime.exec(content, choices=OPTIONS) == "APPROVED"  # type: ignore[arg-type]
    assert await runtime.exec(content) == "text"  # type: ignore[arg-type]

    for request in model.requests:
        assert all(isinstance(b, TextBlock) for b in request.messages[0].content)
        assert request.messages[0].text.startswith("Review.")


@pytest.mark.parametrize(
    "content",
    [
        pytest.param(42, id="int"),
        pytest.param(b"bytes", id="bytes"),
        pytest.param([{"type": "video"}], id="unknown-block"),
        pytest.param([7], id="int-block"),
    ],
)
async def test_exec_bad_content_raises_type_error_before_any_call(content: object) -> None:
    model = ScriptedModel(["text"])

    with pytest.raises(TypeError, match="content"):
        await Runtime(model).exec(content, choices=OPTIONS)  # type: ignore[arg-type]

    assert model.calls == 0


@pytest.mark.parametrize("choices", [None, OPTIONS])
async def test_exec_response_format_that_is_no_dict_raises_before_any_call(
    choices: object,
) -> None:
    model = ScriptedModel(["text"])

    with pytest.raises(TypeError, match="response_format"):
        await Runtime(model).exec("Answer.", choices=choices, response_format="json")  # type: ignore[arg-type]

    assert model.calls == 0
