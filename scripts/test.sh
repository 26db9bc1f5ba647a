#!/usr/bin/env bash
# Install and run the tests, on a fresh machine too (the README's test command; CI's .ci/run ends with it).
#
#   scripts/test.sh [PYTEST ARGUMENTS...]
#
# 1. System packages the tests use, installed from the distribution when missing (Debian/Ubuntu: apt-get, as root
#    or through `sudo -n`): chromium at /usr/bin/chromium (the dashboard's browser test), nodejs + npm (npx starts
#    npm servers), git (mcp-server-git), a C/C++ compiler (llama-cpp-python builds from source on the first
#    install), Python's venv, haproxy and redis-server (tests/cluster/, tests/state/). Where it cannot install one it
#    says so and goes on: the tests that need it fail with a message naming it. NEXUS_TEST_SETUP=0 skips this step.
# 2. A virtual environment ($NEXUS_VENV, default .venv) with `pip install -e '.[dev]'`.
# 3. pytest with the arguments given.
set -euo pipefail
cd "$(dirname "$0")/.."
# llama-cpp-python compiles llama.cpp on its first install. A native build (-march=native) crashed in llama_decode
# on a Xeon with AMX (2026-12-05, 0.3.36); the portable build runs everywhere. Set CMAKE_ARGS to build otherwise.
export CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF}"
python=${PYTHON:-python3}
venv=${NEXUS_VENV:-.venv}

say() { echo "[test.sh] $*" >&2; }

# What is missing, as distribution packages; `why` says which tests need each.
missing_packages() {
    [ -x /usr/bin/chromium ] || echo chromium
    command -v npx >/dev/null 2>&1 || echo nodejs npm
    command -v git >/dev/null 2>&1 || echo git
    { command -v cc && command -v c++; } >/dev/null 2>&1 || echo build-essential
    [ -x "$venv/bin/python" ] || "$python" -c 'import ensurepip, venv' >/dev/null 2>&1 || echo python3-venv
    PATH="$PATH:/usr/sbin:/sbin" command -v haproxy >/dev/null 2>&1 || echo haproxy
    command -v redis-server >/dev/null 2>&1 || echo redis-server
}
why() {
    case $1 in
        chromium) echo "tests/dashboard/test_pages_in_a_browser.py drives /usr/bin/chromium" ;;
        nodejs | npm) echo "tests that start npm servers need npx (Node.js)" ;;
        git) echo "mcp-server-git and the tests that read this repository need git" ;;
        build-essential) echo "llama-cpp-python compiles on its first install: it needs a C/C++ compiler" ;;
        python3-venv) echo "the virtual environment needs Python's venv and ensurepip" ;;
        haproxy) echo "tests/cluster/ runs gateway replicas behind HAProxy" ;;
        redis-server) echo "tests/state/ and tests/cluster/ share the gateway's state (pins, vectors) between replicas in a real Redis" ;;
    esac
}

if [ "${NEXUS_TEST_SETUP:-1}" != 0 ]; then
    read -r -a missing <<<"$(missing_packages | tr '\n' ' ')"
    if [ "${#missing[@]}" -gt 0 ]; then
        sudo=()
        if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
            sudo=(sudo -n)
        fi
        if command -v apt-get >/dev/null 2>&1 && { [ "$(id -u)" = 0 ] || [ "${#sudo[@]}" -gt 0 ]; }; then
            say "installing from the distribution: ${missing[*]}"
            ${sudo[@]+"${sudo[@]}"} env DEBIAN_FRONTEND=noninteractive apt-get update -q >&2 \
                && ${sudo[@]+"${sudo[@]}"} env DEBIAN_FRONTEND=noninteractive \
                    apt-get install -y -q --no-install-recommends "${missing[@]}" >&2 \
                || say "warning: apt-get could not install ${missing[*]}"
        fi
        read -r -a still <<<"$(missing_packages | tr '\n' ' ')"
        for package in ${still[@]+"${still[@]}"}; do
            say "warning: $package is missing and could not be installed here ($(why "$package")); install it with your system's package manager"
        done
    fi
fi

[ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
# shellcheck disable=SC1091
. "$venv/bin/activate"
pip install -e '.[dev]'
exec pytest "$@"
