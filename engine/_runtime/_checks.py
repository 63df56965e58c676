"""Checks of the arguments a runtime call takes, each refusing a bad value by name."""

from __future__ import annotations

from engine.models import ModelSettings

__all__ = ["check_retries", "check_settings", "decision_name"]


def decision_name(name: str | None) -> str:
    """Return a decision's node name: ``name``, checked, or ``"decision"``."""
    if name is None:
        return "decision"
    if not isinstance(name, str) or not name.strip() or len(name) > 200:
        raise ValueError(
            f"name must be a non-empty string of at most 200 characters, or None, got {name!r}"
        )
    return name


def check_settings(settings: object) -> None:
    """Refuse ``settings`` that are not a :class:`~engine.models.ModelSettings` (or ``None``)."""
    if settings is not None and not isinstance(settings, ModelSettings):
        raise TypeError(
            f"settings must be an engine.models.ModelSettings or None, got {settings!r}"
        )


def check_retries(max_retries: int) -> None:
    """Refuse a ``max_retries`` that is not an integer >= 0 (``True`` is not a count)."""
    if not isinstance(max_retries, int) or isinstance(max_retries, bool) or max_retries < 0:
        raise ValueError(
            f"max_retries must be an integer >= 0 (0 disables re-picks), got {max_retries!r}"
        )
