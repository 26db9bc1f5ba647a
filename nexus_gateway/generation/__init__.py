"""Argument generation: from a request and a chosen tool to validated arguments, with the local model.

grammar.py    JSON Schema -> GBNF (or a generic JSON-object grammar when a schema cannot be expressed)
generator.py  `ArgumentGenerator`: signature | splice | prefill, validation, the result and its trace

Everything here talks to the model through the `Engine` protocol (engine/__init__.py) only.
sessions.py   one engine session per client session, with history, least-recently-used eviction
domains.py    known value domains (IANA time zones) decoded as enums
grounding.py  whether a request fills a tool's required arguments: the re-ranker below the margin gate
"""
