#!/usr/bin/env bash
# Copied from the team's shared realserver kit (shared/realserver/start_server.sh), kept
# here so a fresh clone runs `make test-servers` on its own; see tools/realserver/README.md.
#
# Start a local OpenAI-compatible chat-completions server on 127.0.0.1 with a
# tiny random-weight GGUF model (see make_tiny_gguf.py).  Two implementations,
# both third-party:
#   IMPL=llama-cpp-python (default)  `python -m llama_cpp.server` from PyPI's
#                                    llama-cpp-python[server] (built from source)
#   IMPL=llama-server                llama.cpp's own C++ server, built from the
#                                    llama.cpp sources vendored in the same
#                                    llama-cpp-python sdist
#
#   start_server.sh [PORT]        start (or reuse) a server; prints its base URL
#   start_server.sh --stop [PORT] stop the server this script started there
#                                 (without PORT: every server it started)
#
# Idempotent: creates what is missing (venv, build, model; the first build
# takes ~4 min for llama-cpp-python, ~5 min for llama-server on 2 cores) and
# reuses a server it already started on that port with the same IMPL.  Without
# PORT it reuses a running server of its own with that IMPL, else picks a free
# port.  The base URL (http://127.0.0.1:PORT/v1) is the only thing printed on stdout.
#
# Environment:
#   IMPL             llama-cpp-python | llama-server
#   REALSERVER_DIR   work dir for venv, builds, model, logs
#                    (default ${TMPDIR:-/tmp}/realserver)
#   N_CTX            context size (default 4096; about one token per character)
#   SEED             server RNG seed (default: llama-cpp-python's default seed
#                    chain / llama-server's random seed)
#   LLAMA_CPP_PYTHON_VERSION   default 0.3.36 (the tested one)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="${REALSERVER_DIR:-${TMPDIR:-/tmp}/realserver}"
IMPL="${IMPL:-llama-cpp-python}"
VENV="$ROOT/venv"
PY="$VENV/bin/python"
MODEL="$ROOT/models/tiny-random-llama.gguf"
LCP_VERSION="${LLAMA_CPP_PYTHON_VERSION:-0.3.36}"
LLAMA_SERVER="$ROOT/llama-server-build/bin/llama-server"
N_CTX="${N_CTX:-4096}"
HOST=127.0.0.1
NPROC="$(nproc 2>/dev/null || echo 2)"

log() { echo "[start_server] $*" >&2; }
die() { log "$*"; exit 1; }

case "$IMPL" in
    llama-cpp-python|llama-server) ;;
    *) die "IMPL must be llama-cpp-python or llama-server, not '$IMPL'" ;;
esac

mkdir -p "$ROOT/models"
exec 9>"$ROOT/.lock"
flock 9

answers() {  # answers PORT -> 0 if GET /v1/models gives 200
    "$PY" - "$1" <<'EOF' >/dev/null 2>&1
import sys, urllib.request
urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/v1/models", timeout=2).read()
EOF
}
alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }
stop_port() {
    local pidf="$ROOT/server-$1.pid" pid
    if alive "$pidf"; then
        pid="$(cat "$pidf")"
        kill "$pid"
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        log "stopped server on port $1 (pid $pid)"
    fi
    rm -f "$pidf" "$ROOT/server-$1.impl"
}

if [ "${1:-}" = "--stop" ]; then
    if [ -n "${2:-}" ]; then
        alive "$ROOT/server-$2.pid" || log "no server of ours on port $2"
        stop_port "$2"
    else
        for f in "$ROOT"/server-*.pid; do
            [ -f "$f" ] || continue
            p="${f##*/server-}"; stop_port "${p%.pid}"
        done
    fi
    exit 0
fi

# 1. venv: gguf/numpy for the model, openai for check.py, and for
#    IMPL=llama-cpp-python the server itself, built from source, CPU only.
if ! "$PY" -c "import gguf, numpy, openai" >/dev/null 2>&1; then
    log "creating venv in $VENV"
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q --upgrade pip >&2
    "$VENV/bin/pip" install -q gguf numpy openai >&2
fi
if [ "$IMPL" = llama-cpp-python ] && ! "$PY" -c "import llama_cpp.server" >/dev/null 2>&1; then
    log "building llama-cpp-python[server]==$LCP_VERSION (a few minutes; log $ROOT/pip-install.log)"
    CMAKE_ARGS="-DGGML_BLAS=OFF -DGGML_CUDA=OFF -DGGML_METAL=OFF -DGGML_VULKAN=OFF -DGGML_HIP=OFF -DGGML_OPENCL=OFF -DGGML_RPC=OFF -DLLAVA_BUILD=OFF -DLLAMA_CURL=OFF" \
    CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$NPROC}" \
        "$VENV/bin/pip" install "llama-cpp-python[server]==$LCP_VERSION" >"$ROOT/pip-install.log" 2>&1 \
        || { tail -30 "$ROOT/pip-install.log" >&2; die "pip install failed; see $ROOT/pip-install.log"; }
fi

# 2. for IMPL=llama-server: build llama.cpp's server from the sdist's sources
if [ "$IMPL" = llama-server ] && [ ! -x "$LLAMA_SERVER" ]; then
    src="$ROOT/src/llama_cpp_python-$LCP_VERSION"
    if [ ! -f "$src/vendor/llama.cpp/CMakeLists.txt" ]; then
        log "downloading the llama-cpp-python==$LCP_VERSION sdist (llama.cpp sources)"
        mkdir -p "$ROOT/src"
        "$VENV/bin/pip" download -q --no-deps --no-binary :all: "llama-cpp-python==$LCP_VERSION" -d "$ROOT/src" >&2
        tar -xzf "$ROOT/src/llama_cpp_python-$LCP_VERSION.tar.gz" -C "$ROOT/src"
    fi
    gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
    log "building llama-server (a few minutes; log $ROOT/llama-server-build.log)"
    { cmake -S "$src/vendor/llama.cpp" -B "$ROOT/llama-server-build" "${gen[@]}" \
        -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
        -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_TESTS=OFF \
        -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_BUILD_UI=OFF \
        -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF \
        -DGGML_BLAS=OFF -DGGML_CUDA=OFF -DGGML_VULKAN=OFF -DGGML_METAL=OFF \
      && cmake --build "$ROOT/llama-server-build" --target llama-server -j "$NPROC"; } \
        >"$ROOT/llama-server-build.log" 2>&1 \
        || { tail -30 "$ROOT/llama-server-build.log" >&2; die "llama-server build failed"; }
fi

# 3. the model (rewritten when make_tiny_gguf.py changes)
if [ ! -s "$MODEL" ] || [ "$HERE/make_tiny_gguf.py" -nt "$MODEL" ]; then
    log "writing $MODEL"
    "$PY" "$HERE/make_tiny_gguf.py" "$MODEL.tmp" >&2
    mv "$MODEL.tmp" "$MODEL"
fi

# 4. the port
port="${1:-}"
if [ -z "$port" ]; then
    # reuse a running server of ours with this IMPL, the last one started first
    last="$(cat "$ROOT/last_port" 2>/dev/null || true)"
    for f in ${last:+"$ROOT/server-$last.impl"} "$ROOT"/server-*.impl; do
        [ -f "$f" ] || continue
        p="${f##*/server-}"; p="${p%.impl}"
        if [ "$(cat "$f")" = "$IMPL" ] && alive "$ROOT/server-$p.pid" && answers "$p"; then
            port="$p"; break
        fi
    done
    [ -n "$port" ] || port="$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
fi
pidf="$ROOT/server-$port.pid"
logf="$ROOT/server-$port.log"

if alive "$pidf" && answers "$port" && [ "$(cat "$ROOT/server-$port.impl" 2>/dev/null)" = "$IMPL" ] \
    && [ ! "$MODEL" -nt "$pidf" ]; then
    log "reusing $IMPL server on port $port (pid $(cat "$pidf")), log $logf"
else
    stop_port "$port"
    # SO_REUSEADDR as the servers do, so TIME_WAIT leftovers do not count as busy
    "$PY" -c 'import socket,sys; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("127.0.0.1", int(sys.argv[1])))' "$port" 2>/dev/null \
        || die "port $port is in use by something else"
    log "starting $IMPL on $HOST:$port, log $logf"
    if [ "$IMPL" = llama-cpp-python ]; then
        cmd=("$PY" -m llama_cpp.server --model "$MODEL" --model_alias tiny-random-llama
             --host "$HOST" --port "$port" --n_ctx "$N_CTX" --n_threads 1 --n_threads_batch 1
             --interrupt_requests False --verbose False)
        [ -n "${SEED:-}" ] && cmd+=(--seed "$SEED")
    else
        cmd=("$LLAMA_SERVER" -m "$MODEL" -a tiny-random-llama --host "$HOST" --port "$port"
             -c "$N_CTX" -np 1 -t 1 --jinja)
        [ -n "${SEED:-}" ] && cmd+=(--seed "$SEED")
    fi
    nohup "${cmd[@]}" >"$logf" 2>&1 </dev/null 9>&- &
    echo $! >"$pidf"
    echo "$IMPL" >"$ROOT/server-$port.impl"
    for _ in $(seq 120); do
        answers "$port" && break
        alive "$pidf" || { tail -30 "$logf" >&2; rm -f "$pidf"; die "server exited; log above"; }
        sleep 0.5
    done
    answers "$port" || die "server did not answer within 60 s; log $logf"
fi
echo "$port" >"$ROOT/last_port"
echo "http://$HOST:$port/v1"
