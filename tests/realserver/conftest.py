"""Fixtures of the real-server tests: two OpenAI-compatible servers nobody here wrote.

``make test-servers`` (tools/realserver/test_servers.sh) starts llama-cpp-python's server and
llama.cpp's ``llama-server``, each serving a tiny random-weight model, and names them in
``REALSERVER_URLS`` (``llama-cpp-python=http://127.0.0.1:PORT/v1,llama-server=...``). Without
it these tests skip and say how to run them. The model's replies are random: the tests
assert what the engine does with them (a valid pick, or a decision error of a true kind;
never a provider error the engine's request caused), never which pick it made.
"""

from __future__ import annotations

import urllib.request

import pytest
from realserver_support import SERVERS, RealServer, server_urls


def _answers(url: str) -> str | None:
    try:
        with urllib.request.urlopen(f"{url}/models", timeout=30) as reply:
            reply.read()
    except OSError as exc:
        return f"{url}/models does not answer ({exc})"
    return None


@pytest.fixture(params=SERVERS)
def server(request: pytest.FixtureRequest) -> RealServer:
    """Each real server in turn; skips when ``REALSERVER_URLS`` is unset (plain ``make test``)."""
    return _one(str(request.param))


def _running(urls: dict[str, str], name: str) -> RealServer:
    other = next(n for n in SERVERS if n != name)
    if name not in urls or other not in urls:
        pytest.fail(f"REALSERVER_URLS names {sorted(urls)}; these tests need both {SERVERS}")
    for url in (urls[name], urls[other]):
        # A server that was named but does not answer is a broken setup, not a skip.
        if (why := _answers(url)) is not None:
            pytest.fail(why)
    return RealServer(name, urls[name], other, urls[other])


@pytest.fixture
def llama_server() -> RealServer:
    """llama-server alone: the fast one (a 4,096-token reply in seconds, where
    llama-cpp-python's server, one thread, takes minutes on a busy machine)."""
    return _one("llama-server")


@pytest.fixture
def llama_cpp_python() -> RealServer:
    """llama-cpp-python's server alone: the one that refuses ``json_schema``."""
    return _one("llama-cpp-python")


def _one(name: str) -> RealServer:
    urls = server_urls()
    if not urls:
        pytest.skip(
            "no real server: `make test-servers` starts llama-cpp-python's server and "
            "llama-server and runs these tests (REALSERVER_URLS names running ones)"
        )
    return _running(urls, name)
