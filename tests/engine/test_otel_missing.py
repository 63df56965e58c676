"""Without the otel extra, importing engine.otel says how to install it."""

from __future__ import annotations

import importlib
import sys

import pytest


def test_importing_without_opentelemetry_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [m for m in sys.modules if m.startswith("opentelemetry")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "opentelemetry", None)  # an import of it now fails
    for name in ("engine.otel", "engine._observe._otel"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    with pytest.raises(ImportError, match=r'pip install -e "\.\[otel\]"') as caught:
        importlib.import_module("engine.otel")
    assert caught.type is ImportError
    assert caught.value.name == "opentelemetry"
