"""Tests of the bench harness itself (bench/): its script, its report, a real quick run against the fake."""
