"""Pick the model a command runs with: ``--model``, else a provider key, else refuse.

``--model`` takes what :func:`engine.models.model_from_string` takes (``openai:gpt-4o-mini``,
``anthropic:claude-sonnet-4-5``, ``openai:<model>@<base_url>``) and, for the offline model,
``simulated`` with options: ``simulated:seed=7,faults=0.1,latency=0.01-0.05,tool_rate=0.5``
(``faults`` spreads one rate over the three reply faults; any fault of
:class:`~engine.models.Faults` may be named on its own, as in ``no_json=0.05``;
``tool_rate`` is the share of tool-offering turns in which it calls a tool first).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from engine.cli._common import CliError, fail
from engine.models import Model

__all__ = ["NO_MODEL", "ChosenModel", "choose_model", "simulated_model"]

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


def choose_model(spec: str | None, environ: Mapping[str, str] | None = None) -> ChosenModel:
    """Return the model ``--model`` names, or the default for this environment.

    SimulatedModel (which picks at random) is used only when named: with no ``--model`` and
    no provider key, the command stops with :data:`NO_MODEL` (exit status 2).
    """
    env = os.environ if environ is None else environ
    if spec:
        return ChosenModel(_from_spec(spec), spec)
    for key, default in DEFAULTS.items():
        if env.get(key):
            note = f"no --model given: using {default} because {key} is set"
            return ChosenModel(_from_spec(default), default, note)
    raise CliError(NO_MODEL)  # SimulatedModel picks at random: it runs only when named


def _from_spec(spec: str) -> Model:
    from engine.models import model_from_string

    try:
        return model_from_string(spec)
    except (ValueError, TypeError, ImportError) as exc:
        fail(f"--model {spec!r}: {exc}")


def simulated_model(options: str) -> Model:
    """Build a SimulatedModel from ``seed=7,faults=0.1,latency=0.01-0.05`` (or a bare seed)."""
    return _from_spec(f"simulated:{options}" if options else "simulated")
