"""Median and spread of repeated measurements, so one noisy run cannot pass for the truth."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Summary:
    """Order statistics of one sample: what the table and the document show."""

    n: int
    median: float
    p10: float
    p90: float
    q1: float
    q3: float
    minimum: float
    maximum: float

    @property
    def iqr(self) -> float:
        """Width of the middle half of the sample."""
        return self.q3 - self.q1

    def scaled(self, factor: float) -> Summary:
        """The same summary in another unit (e.g. seconds to milliseconds)."""
        return Summary(
            n=self.n,
            median=self.median * factor,
            p10=self.p10 * factor,
            p90=self.p90 * factor,
            q1=self.q1 * factor,
            q3=self.q3 * factor,
            minimum=self.minimum * factor,
            maximum=self.maximum * factor,
        )


def summarize(samples: Sequence[float]) -> Summary:
    """Median, quartiles, 10th/90th percentiles and range; a single sample is its own spread."""
    if not samples:
        raise ValueError("cannot summarize an empty sample")
    data = sorted(float(x) for x in samples)
    if len(data) == 1:
        only = data[0]
        return Summary(1, only, only, only, only, only, only, only)
    quartiles = statistics.quantiles(data, n=4, method="inclusive")
    deciles = statistics.quantiles(data, n=10, method="inclusive")
    return Summary(
        n=len(data),
        median=statistics.median(data),
        p10=deciles[0],
        p90=deciles[-1],
        q1=quartiles[0],
        q3=quartiles[2],
        minimum=data[0],
        maximum=data[-1],
    )


def paired_differences(first: Sequence[float], second: Sequence[float]) -> list[float]:
    """``first[i] - second[i]`` for samples taken in pairs (e.g. server call vs direct upstream call)."""
    if len(first) != len(second):
        raise ValueError(f"paired samples differ in length: {len(first)} vs {len(second)}")
    return [a - b for a, b in zip(first, second, strict=True)]
