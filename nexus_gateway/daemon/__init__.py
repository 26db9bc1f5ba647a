"""One gateway for every host: the daemon (service.py), the stdio shim a host launches (shim.py), the files
they share in `<state_dir>/daemon/` (locate.py), the lock that keeps it to one daemon (lock.py), and the
status and stop commands (control.py)."""
