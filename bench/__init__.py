"""Benchmarks: speed, size and resilience figures measured against a local fake upstream."""
