#!/usr/bin/env bash
# `make test-servers`: start llama-cpp-python's server and llama.cpp's llama-server, each
# serving the tiny random-weight model of make_tiny_gguf.py on a free port of 127.0.0.1,
# run tests/realserver against both (REALSERVER_URLS names them), and stop the two servers
# whatever happens (servers that were already running elsewhere are left alone).
#
# Builds go to REALSERVER_DIR (default ${TMPDIR:-/tmp}/realserver) and are reused: the first
# run builds both servers (~8 min on 2 cores), later ones start them in seconds.
# Arguments are passed to pytest (`make test-servers ARGS="-k dead_port"`).
set -euo pipefail
cd "$(dirname "$0")/../.."
HERE=tools/realserver
PY="${ENGINE_PYTHON:-.venv/bin/python}"
export REALSERVER_DIR="${REALSERVER_DIR:-${TMPDIR:-/tmp}/realserver}"

free_port() {
    "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

ports=()
stop_servers() {
    for port in "${ports[@]}"; do
        "$HERE/start_server.sh" --stop "$port" || true
    done
}
trap stop_servers EXIT

started=$(date +%s)
urls=()
for impl in llama-cpp-python llama-server; do
    port="$(free_port)"
    ports+=("$port")
    url="$(IMPL="$impl" "$HERE/start_server.sh" "$port")"
    echo "[test-servers] $impl at $url ($(($(date +%s) - started)) s)" >&2
    urls+=("$impl=$url")
done

export REALSERVER_URLS="${urls[0]},${urls[1]}"
status=0
"$PY" -m pytest -q -p no:randomly tests/realserver "$@" || status=$?
if [ "$status" -ne 0 ]; then
    echo "[test-servers] the servers' logs: $REALSERVER_DIR/server-PORT.log, ports ${ports[*]}" >&2
fi
echo "[test-servers] done in $(($(date +%s) - started)) s" >&2
exit "$status"
