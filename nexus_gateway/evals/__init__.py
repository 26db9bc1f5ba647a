"""Evaluations on labelled sets in the format of DESIGN.md (tools.json + cases.jsonl)."""
