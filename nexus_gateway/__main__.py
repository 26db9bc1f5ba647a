from nexus_gateway.runtime import _startup_signals

if __name__ == "__main__":
    _startup_signals.catch()  # before the CLI's imports (most of a second): no SIGINT or SIGTERM is lost meanwhile

from nexus_gateway.cli.main import main

if __name__ == "__main__":
    main()
