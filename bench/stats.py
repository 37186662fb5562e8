"""Median and spread of repeated measurements, so one noisy run cannot pass for the truth."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Summary:
    """Order statistics of one sample: what the tables show."""

    n: int
    median: float
    p95: float
    minimum: float
    maximum: float


def summarize(samples: Sequence[float]) -> Summary:
    """Median, 95th percentile (inclusive method) and range; a single sample is its own spread."""
    if not samples:
        raise ValueError("cannot summarize an empty sample")
    data = sorted(float(x) for x in samples)
    p95 = statistics.quantiles(data, n=20, method="inclusive")[-1] if len(data) > 1 else data[0]
    return Summary(n=len(data), median=statistics.median(data), p95=p95, minimum=data[0], maximum=data[-1])


def ratio(ours: float, theirs: float) -> float | None:
    """``ours / theirs``, or None when there is nothing to divide by (the official server sent no request)."""
    return ours / theirs if theirs else None
