"""What a person needs to settle a run that stopped at a decision, as ``engine show`` prints it.

A suspended run (its model failed a decision) and a waiting run (its flow asks a person, or
waits for the approval of a model's pick) are shown with the run's input, each question
asked, each option with its arguments (type, allowed values, default, bounds, description)
and a ready command line whose pick is valid: ``engine resume RUN_ID --pick ...`` for a
suspended run, ``engine answer RUN_ID ...`` for a waiting one. Everything comes from the
stored run (``run.error.menu``, ``run.error.questions``), so it reads the same from any
machine; text from the store is returned as plain lines, never as markup.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from engine._decision import example_pick
from engine.cli._hints import command_line
from engine.store import Run

__all__ = ["decide_lines"]

#: The width of the label column.
_LABEL = 10
_INPUT_CHARS = 400
_TEXT_CHARS = 300
#: Bounds, in the words a person reads them.
_BOUNDS = {
    "minimum": "at least",
    "maximum": "at most",
    "exclusiveMinimum": "more than",
    "exclusiveMaximum": "less than",
    "multipleOf": "a multiple of",
    "minLength": "at least {} characters",
    "maxLength": "at most {} characters",
    "pattern": "matching",
    "minItems": "at least {} items",
    "maxItems": "at most {} items",
}


def decide_lines(run: Run, store: str, names: Mapping[str, str] | None = None) -> list[str]:
    """Return the lines that tell a person what to decide for ``run``; none if nothing is asked.

    Args:
        run: The stored run, suspended at a decision or waiting.
        store: The ``--store`` the command was given; command lines name it unless it is
            the default.
        names: Decision names by node key (read from the run's trace), for a suspended run's
            failing decision.
    """
    error = run.error
    if error is None:
        return []
    if run.status == "waiting" and error.questions:
        questions = [q for q in error.questions if isinstance(q, Mapping)]
        lines = _row("input", _input(run))
        for i, question in enumerate(questions):
            lines += _question(run, store, question, i, questions)
        return lines
    if run.status == "suspended" and error.menu:
        where = error.where or "?"
        name = (names or {}).get(where, "decision")
        head = f"{_called(name)} at {where}: the model failed ({error.kind}); decide it by hand"
        lines = _row("input", _input(run)) + _row("question", head)
        if error.prompt:
            lines += _row("asked", error.prompt)
        lines += _options(error.menu)
        picks = _valid_picks(error.menu)
        if picks:
            lines += _row("pick", _command(store, "resume", run.run_id, "--pick", picks[0]))
        return lines
    return []


def _question(
    run: Run,
    store: str,
    question: Mapping[str, Any],
    i: int,
    questions: Sequence[Mapping[str, Any]],
) -> list[str]:
    where = str(question.get("where") or "?")
    name = str(question.get("name") or "decision")
    count = f"{i + 1} of {len(questions)}: " if len(questions) > 1 else ""
    approval = question.get("kind") == "approval"
    what = "approval of the model's pick" if approval else _called(name)
    head = f"{count}{what} at {where}{_times(question)}"
    lines = _row("question", head)
    if question.get("prompt"):
        lines += _row("asked", str(question["prompt"]))
    menu = [o for o in question.get("menu") or () if isinstance(o, Mapping)]
    which = _which(question, questions)
    if approval:
        pick = question.get("pick")
        picked = pick.get("call") if isinstance(pick, Mapping) else None
        lines += _row("picked", _json(pick))
        lines += _options([o for o in menu if o.get("name") == picked] or menu)
        args = pick.get("args") if isinstance(pick, Mapping) else None
        commands = [
            _command(store, "answer", run.run_id, *which, "--approve"),
            _command(store, "answer", run.run_id, *which, "--edit", args or {}),
            _command(store, "answer", run.run_id, *which, "--reject", "REASON"),
        ]
        return lines + _row("answer", "\n".join(commands))
    lines += _options(menu)
    picks = _valid_picks(menu)
    if picks:
        lines += _row("answer", _command(store, "answer", run.run_id, *which, "--pick", picks[0]))
    return lines


def _which(question: Mapping[str, Any], questions: Sequence[Mapping[str, Any]]) -> list[str]:
    """The ``--where`` that names this question, when the run waits at several."""
    if len(questions) < 2:
        return []
    name = question.get("name")
    if name and name != "decision" and [q.get("name") for q in questions].count(name) == 1:
        return ["--where", str(name)]
    return ["--where", str(question.get("where"))]


def _called(name: str) -> str:
    return "decision" if name == "decision" else f"decision {name}"


def _times(question: Mapping[str, Any]) -> str:
    parts = []
    for key, word in (("asked_at", "asked"), ("deadline_at", "deadline")):
        value = question.get(key)
        if isinstance(value, int | float):
            parts.append(f"{word} {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(value))}")
    return f" ({', '.join(parts)})" if parts else ""


# -- options and their arguments ---------------------------------------------------------------


def _options(menu: Iterable[Mapping[str, Any]]) -> list[str]:
    lines: list[str] = []
    for option in menu:
        head = str(option.get("name"))
        if option.get("description"):
            head += f": {_one_line(option['description'])}"
        lines.append(head)
        for arg in option.get("args") or ():
            if isinstance(arg, Mapping):
                lines.extend(_argument(arg, str(arg.get("name")), "  "))
    return _row("options", "\n".join(lines)) if lines else []


def _argument(arg: Mapping[str, Any], path: str, indent: str) -> list[str]:
    """One argument's line (``name: type = default, required, bounds — description``), and
    its nested fields' lines (``to.street``, ``steps[].action``)."""
    fields = arg.get("fields")
    items = arg.get("items") if isinstance(arg.get("items"), Mapping) else None
    nested = items.get("fields") if items is not None else None
    kind = "object" if fields else "list[object]" if nested else str(arg.get("type", "?"))
    text = f"{indent}{path}: {kind}"
    if "default" in arg:
        text += f" = {_json(arg['default'])}"
    if arg.get("required"):
        text += ", required"
    for key, value in (arg.get("bounds") or {}).items():
        words = _BOUNDS.get(key, key)
        text += f", {words.format(value)}" if "{}" in words else f", {words} {_json(value)}"
    if arg.get("description"):
        text += f" — {_one_line(arg['description'])}"
    lines = [text]
    for sub, prefix in ((fields, f"{path}."), (nested, f"{path}[].")):
        for field in sub or ():
            if isinstance(field, Mapping):
                lines.extend(_argument(field, f"{prefix}{field.get('name')}", indent + "  "))
    return lines


def _valid_picks(menu: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [example_pick(option) for option in menu if isinstance(option, Mapping)]


# -- text ----------------------------------------------------------------------------------------


def _row(label: str, text: str) -> list[str]:
    """Lines of one labelled row: the label, then the text, its further lines aligned."""
    pad = " " * _LABEL
    lines = text.splitlines() or [""]
    return [
        f"{label:<{_LABEL}}{lines[0]}".rstrip(),
        *(f"{pad}{line}".rstrip() for line in lines[1:]),
    ]


def _input(run: Run) -> str:
    return _short(json.dumps(run.input, ensure_ascii=False, default=str), _INPUT_CHARS)


def _command(store: str, verb: str, run_id: str, *args: object) -> str:
    """A command line to paste, as every hint of the CLI: JSON arguments quoted for a shell."""
    words = [a if isinstance(a, str) else _json(a) for a in args]
    return command_line(verb, run_id, *words, store=store)


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _one_line(text: object) -> str:
    return _short(" ".join(str(text).split()), _TEXT_CHARS)


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
