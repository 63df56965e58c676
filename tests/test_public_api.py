"""The public names: each ``__all__`` matches what its module exports."""

from __future__ import annotations

import inspect
import re
import subprocess
import sys
import types

import pytest

import engine
import engine.decision
import engine.distributed
import engine.models
import engine.otel
import engine.store
from engine.models import Request, ScriptedModel

MODULES = [
    pytest.param(engine, id="engine"),
    pytest.param(engine.decision, id="engine.decision"),
    pytest.param(engine.models, id="engine.models"),
    pytest.param(engine.store, id="engine.store"),
    pytest.param(engine.otel, id="engine.otel"),
    pytest.param(engine.distributed, id="engine.distributed"),
]


def _defined_by_the_package(value: object) -> bool:
    """Whether ``value`` comes from the engine itself (not typing, stdlib or pydantic)."""
    module = getattr(value, "__module__", None)
    if not isinstance(module, str):
        return True  # constants and instances: only the package can have put them there
    return module == "engine" or module.startswith("engine.")


def _isort_key(name: str) -> tuple[int, list[int | str]]:
    """The order ruff keeps ``__all__`` in: CONSTANTS, then Classes, then the rest, naturally."""
    casing = 0 if name.isupper() else 1 if name[:1].isupper() else 2
    return casing, [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


@pytest.mark.parametrize("module", MODULES)
def test_public_api_all_is_sorted_and_unique(module: types.ModuleType) -> None:
    assert module.__all__ == sorted(set(module.__all__), key=_isort_key)


@pytest.mark.parametrize("module", MODULES)
def test_public_api_every_name_in_all_exists(module: types.ModuleType) -> None:
    missing = [name for name in module.__all__ if not hasattr(module, name)]

    assert missing == []


@pytest.mark.parametrize("module", MODULES)
def test_public_api_every_public_attribute_is_in_all(module: types.ModuleType) -> None:
    unlisted = [
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and not inspect.ismodule(value)
        and name != "annotations"  # `from __future__ import annotations`
        and _defined_by_the_package(value)
        and name not in module.__all__
    ]

    assert unlisted == []


@pytest.mark.parametrize(
    ("module", "names"),
    [
        pytest.param(
            engine,
            {"agentic_function", "decision", "Runtime", "DecisionError", "DeadlineExceeded"},
            id="engine",
        ),
        pytest.param(
            engine.decision,
            {
                "make",
                "render_options",
                "extract_action",
                "parse_args",
                "resolve_decision",
                "DECISION_FINISH_INSTRUCTION",
                "DecisionError",
            },
            id="engine.decision",
        ),
        pytest.param(engine.models, {"Model", "ScriptedModel"}, id="engine.models"),
        pytest.param(
            engine.store,
            {"Store", "MemoryStore", "SQLiteStore", "PostgresStore", "Run", "JournalRecord"},
            id="engine.store",
        ),
        pytest.param(engine.otel, {"export_run"}, id="engine.otel"),
        pytest.param(
            engine.distributed, {"submit", "worker", "request_resume"}, id="engine.distributed"
        ),
    ],
)
def test_public_api_contract_names_are_exported(module: types.ModuleType, names: set[str]) -> None:
    assert names <= set(module.__all__)


def test_public_api_distributed_imports_without_the_postgres_extra() -> None:
    # procrastinate and psycopg are needed when a queue or a PostgresStore is used, not to
    # import: a None entry in sys.modules makes their import fail as if not installed.
    blocked = ["procrastinate", "psycopg", "psycopg_pool"]
    code = (
        f"import sys; sys.modules.update(dict.fromkeys({blocked!r})); "
        "import engine.distributed; print(*engine.distributed.__all__)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == engine.distributed.__all__


def test_public_api_exceptions_subclass_the_builtin_a_user_catches() -> None:
    assert issubclass(engine.DecisionError, ValueError)
    assert issubclass(engine.DeadlineExceeded, TimeoutError)
    assert engine.decision.DecisionError is engine.DecisionError


@pytest.mark.parametrize(
    ("function", "defaults"),
    [
        pytest.param(
            engine.Runtime.exec,
            {
                "choices": None,
                "tools": None,
                "response_format": None,
                "model": None,
                "timeout_s": None,
                "max_iterations": 20,
                "max_retries": 1,
                "context": None,
                "on_retry": None,
            },
            id="exec",
        ),
        pytest.param(
            engine.decision.make,
            {"runtime": None, "context": None, "max_retries": 1},
            id="make",
        ),
    ],
)
def test_public_api_keyword_defaults_match_the_contract(
    function: object, defaults: dict[str, object]
) -> None:
    params = inspect.signature(function).parameters  # type: ignore[arg-type]

    assert {name: params[name].default for name in defaults} == defaults
    assert all(params[name].kind is inspect.Parameter.KEYWORD_ONLY for name in defaults)


# The test double ----------------------------------------------------------------------------


async def test_scripted_model_answers_in_order_then_says_it_ran_out() -> None:
    model = ScriptedModel(["one", "two"])
    runtime = engine.Runtime(model)

    assert [await runtime.exec("a"), await runtime.exec("b")] == ["one", "two"]
    with pytest.raises(engine.ScriptExhaustedError, match="ran out of replies after 2"):
        await runtime.exec("c")

    assert [r.messages[0].text for r in model.requests] == ["a", "b", "c"]
    assert [r.messages[0].role for r in model.requests] == ["user"] * 3


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
async def test_scripted_model_reply_function_sees_the_request(is_async: bool) -> None:
    def echo(request: Request) -> str:
        return request.messages[-1].text.upper()

    async def aecho(request: Request) -> str:
        return echo(request)

    model = ScriptedModel(aecho if is_async else echo)

    assert await engine.Runtime(model).exec("hello") == "HELLO"
    assert model.calls == 1


def test_scripted_model_rejects_a_single_string() -> None:
    with pytest.raises(TypeError, match="one string"):
        ScriptedModel("reply")


def test_scripted_model_is_a_model() -> None:
    assert isinstance(ScriptedModel([]), engine.models.Model)
