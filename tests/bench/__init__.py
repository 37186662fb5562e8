"""Tests of bench/: its pure parts (statistics, readings, targets, tables, the report) and its helpers."""
