"""The web dashboard at `/ui` on the HTTP front: pages (pages.py) over a narrow view of the gateway
(source.py), browsers signed in by token once, then by cookie (auth.py)."""

# The submodules are imported where they are used: pages.py loads jinja2, which a stdio `serve` never needs.
