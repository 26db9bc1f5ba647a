"""Argument generation: from a request and a chosen tool to validated arguments, with the local model.

grammar.py    JSON Schema -> GBNF (or a generic JSON-object grammar when a schema cannot be expressed)
decoding.py   grammar-constrained greedy decoding on the engine thread, with its timings
generator.py  `ArgumentGenerator`: signature | splice | prefill, validation, the result and its trace
sessions.py   one engine session per client session, with history, least-recently-used eviction
rerank.py     the local model choosing among ambiguous routing candidates
"""
