"""Pick the model a command runs with: ``--model``, else a provider key, else refuse.

``--model`` takes what :func:`engine.models.model_from_string` takes (``openai:gpt-4o-mini``,
``anthropic:claude-sonnet-4-5``, ``openai:<model>@<base_url>``) and, for the offline model,
``simulated`` with options: ``simulated:seed=7,faults=0.1,latency=0.01-0.05,tool_rate=0.5``
(``faults`` spreads one rate over the three reply faults; any fault of
:class:`~engine.models.Faults` may be named on its own, as in ``no_json=0.05``;
``tool_rate`` is the share of tool-offering turns in which it calls a tool first).

Any form takes model settings after a ``?`` (``openai:tiny@http://127.0.0.1:8080/v1?max_tokens=64``),
and ``--model-setting key=value`` (repeatable) lays settings over them:
:class:`~engine.models.ModelSettings` says which keys there are.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated

import typer

from engine.cli._common import CliError, fail
from engine.models import Model, ModelSettings

__all__ = [
    "NO_MODEL",
    "ChosenModel",
    "SettingOpt",
    "choose_model",
    "model_settings",
    "simulated_model",
    "spec_with_settings",
]

#: ``--model-setting key=value``, repeatable, on every command that builds a model.
SettingOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--model-setting",
        help="A model setting as key=value, repeatable: max_tokens=64, temperature=0.2, "
        "top_p=0.9, seed=7, stop=END, extra.NAME=VALUE (a body field the server reads).",
    ),
]

#: Provider keys looked for when no ``--model`` is given, with the model each one selects.
DEFAULTS: dict[str, str] = {
    "OPENAI_API_KEY": "openai:gpt-4o-mini",
    "ANTHROPIC_API_KEY": "anthropic:claude-3-5-haiku-latest",
}

#: Why a command that calls a model refuses to start without one (exit status 2).
NO_MODEL = (
    "no model chosen: no --model given and neither OPENAI_API_KEY nor ANTHROPIC_API_KEY is "
    "set; pass --model openai:gpt-4o-mini (or anthropic:<model>, openai:<model>@<base_url>), "
    "set one of those variables, or pass --model simulated for the offline stand-in that "
    "picks options at random"
)


@dataclass(frozen=True, slots=True)
class ChosenModel:
    """The model a command uses, and a note to show when the user did not choose it."""

    model: Model
    spec: str
    note: str | None = None


def choose_model(
    spec: str | None,
    environ: Mapping[str, str] | None = None,
    *,
    settings: Sequence[str] | None = None,
) -> ChosenModel:
    """Return the model ``--model`` names, or the default for this environment.

    SimulatedModel (which picks at random) is used only when named: with no ``--model`` and
    no provider key, the command stops with :data:`NO_MODEL` (exit status 2). ``settings``
    (the ``--model-setting`` values) are laid over the model's own; a bad one stops the
    command naming its key (exit status 2).
    """
    asked = model_settings(settings)
    env = os.environ if environ is None else environ
    chosen: ChosenModel | None = None
    if spec:
        chosen = ChosenModel(_from_spec(spec), spec)
    else:
        for key, default in DEFAULTS.items():
            if env.get(key):
                note = f"no --model given: using {default} because {key} is set"
                chosen = ChosenModel(_from_spec(default), default, note)
                break
    if chosen is None:
        raise CliError(NO_MODEL)  # SimulatedModel picks at random: it runs only when named
    if asked:
        _lay_over(chosen.model, asked)
    return chosen


def model_settings(items: Sequence[str] | None) -> ModelSettings:
    """Return the settings of ``--model-setting`` values, or stop naming the bad one."""
    try:
        return ModelSettings.parse(items or ())
    except ValueError as exc:
        fail(f"--model-setting: {exc}")


def spec_with_settings(spec: str | None, items: Sequence[str] | None) -> str | None:
    """Return ``spec`` with ``--model-setting`` values added as ``?key=value`` options.

    For a model named by string to another process (a queued resume's worker); settings
    without a ``--model`` stop the command.
    """
    asked = model_settings(items)
    if not asked:
        return spec
    if spec is None:
        fail("--model-setting goes with --model here: the settings travel in the model's name")
    return f"{spec}{'&' if '?' in spec else '?'}{'&'.join(asked.to_pairs())}"


def _lay_over(model: Model, asked: ModelSettings) -> None:
    own = getattr(model, "settings", None)
    if not isinstance(own, ModelSettings):
        fail(f"--model-setting: the model {model.name!r} takes no settings")
    setattr(model, "settings", own.merge(asked))  # noqa: B010 (not part of the Model protocol)


def _from_spec(spec: str) -> Model:
    from engine.models import model_from_string

    try:
        return model_from_string(spec)
    except (ValueError, TypeError, ImportError) as exc:
        fail(f"--model {spec!r}: {exc}")


def simulated_model(options: str) -> Model:
    """Build a SimulatedModel from ``seed=7,faults=0.1,latency=0.01-0.05`` (or a bare seed)."""
    return _from_spec(f"simulated:{options}" if options else "simulated")
