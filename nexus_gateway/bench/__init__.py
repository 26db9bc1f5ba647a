"""Benchmarks behind `nexus-gateway bench ...`; each writes JSON and compares within one run."""
