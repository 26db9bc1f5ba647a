"""Argument generation: from a request and a chosen tool to validated arguments, with the local model.

grammar.py    JSON Schema -> GBNF (or a generic JSON-object grammar when a schema cannot be expressed)
decoding.py   grammar-constrained greedy decoding on the engine thread, with its timings
generator.py  `ArgumentGenerator`: signature | splice | prefill, validation, the result and its trace
sessions.py   one engine session per client session, with history, least-recently-used eviction
domains.py    known value domains (IANA time zones) decoded as enums
grounding.py  whether a request fills a tool's required arguments: the re-ranker below the margin gate
"""
