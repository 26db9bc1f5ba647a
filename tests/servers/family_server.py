"""An upstream that starts a grandchild and can refuse to die, chosen by flags.

    --keep-running     do not exit when stdin closes (sleep instead)
    --ignore-sigterm   the upstream and its grandchild both ignore SIGTERM
Tool: family() -> "PID GRANDCHILD_PID". The grandchild inherits stdin, stdout and stderr, as the
children of `npx` or `uvx` do.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time

from mcp.server import MCPServer


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--keep-running", action="store_true")
    parser.add_argument("--ignore-sigterm", action="store_true")
    args = parser.parse_args()
    ignore = "signal.signal(signal.SIGTERM, signal.SIG_IGN)" if args.ignore_sigterm else "pass"
    grandchild = subprocess.Popen([sys.executable, "-c", f"import signal, time\n{ignore}\ntime.sleep(3600)"])
    if args.ignore_sigterm:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)

    server = MCPServer("family")

    @server.tool()
    def family() -> str:
        """This server's pid and its grandchild's."""
        return f"{os.getpid()} {grandchild.pid}"

    server.run()
    while args.keep_running:
        time.sleep(3600)


if __name__ == "__main__":
    main()
