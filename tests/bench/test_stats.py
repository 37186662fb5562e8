"""Medians and spreads of repeated measurements."""

from __future__ import annotations

import pytest

from bench.stats import paired_differences, summarize

# ------------------------------------------------------------------------------------------------ statistics


def test_summary_of_known_sample() -> None:
    s = summarize([5.0, 1.0, 3.0, 2.0, 4.0])
    assert (s.n, s.median, s.minimum, s.maximum) == (5, 3.0, 1.0, 5.0)
    assert (s.q1, s.q3, s.iqr) == (2.0, 4.0, 2.0)
    assert s.p10 == pytest.approx(1.4)
    assert s.p90 == pytest.approx(4.6)


def test_summary_of_even_sample_interpolates_the_median() -> None:
    s = summarize([1.0, 2.0, 3.0, 10.0])
    assert s.median == 2.5
    assert s.minimum == 1.0 and s.maximum == 10.0
    assert s.q1 <= s.median <= s.q3


def test_summary_of_one_sample_is_its_own_spread() -> None:
    s = summarize([0.25])
    assert (s.n, s.median, s.p10, s.p90, s.q1, s.q3, s.iqr) == (1, 0.25, 0.25, 0.25, 0.25, 0.25, 0.0)


def test_summary_of_nothing_is_an_error() -> None:
    with pytest.raises(ValueError, match="empty"):
        summarize([])


def test_scaled_summary_changes_every_figure() -> None:
    s = summarize([0.001, 0.002, 0.003]).scaled(1000)
    assert (s.minimum, s.median, s.maximum) == pytest.approx((1.0, 2.0, 3.0))


def test_paired_differences() -> None:
    assert paired_differences([3.0, 5.0], [1.0, 1.5]) == [2.0, 3.5]
    with pytest.raises(ValueError, match="differ in length"):
        paired_differences([1.0], [1.0, 2.0])
