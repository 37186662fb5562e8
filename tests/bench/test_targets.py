"""Each target's verdict: inclusive limits, every run of a burst, the status words."""

from __future__ import annotations

import pytest

from bench.targets import (
    MET,
    MISSED,
    NO_TARGET,
    judge_bursts,
    judge_hit,
    judge_miss,
    judge_startup,
    judge_text,
    judge_tools_list,
    status_word,
)
from tests.bench.figures import MS, burst_run, text_result

# ------------------------------------------------------------------------------------------------ verdicts


def test_startup_target_is_inclusive_at_one_point_zero_five() -> None:
    assert judge_startup(1.05, 1.0)
    assert not judge_startup(1.06, 1.0)
    with pytest.raises(ValueError, match="positive"):
        judge_startup(1.0, 0.0)


def test_tools_list_must_be_under_fifteen_thousand_bytes() -> None:
    assert judge_tools_list(14_999)
    assert not judge_tools_list(15_000)


def test_miss_overhead_and_hit_time_limits() -> None:
    assert judge_miss(4.0 * MS, 1.0 * MS)
    assert not judge_miss(4.1 * MS, 1.0 * MS)
    assert judge_hit(0.9 * MS)
    assert not judge_hit(1.0 * MS)


def test_text_target_needs_size_ages_and_clean_snippets() -> None:
    assert judge_text(text_result())
    assert not judge_text(text_result(text_bytes=2970))
    assert not judge_text(text_result(ages_shown=8))
    assert not judge_text(text_result(markup=["&quot;"]))
    assert not judge_text(text_result(results=0))


def test_burst_target_holds_only_if_every_run_holds() -> None:
    assert judge_bursts([burst_run(), burst_run(wall=9.9)], 9.9, strict=False)
    assert not judge_bursts([burst_run(), burst_run(wall=9.91)], 9.9, strict=False)
    assert not judge_bursts([burst_run(ok=9)], 9.9, strict=False)
    assert not judge_bursts([burst_run(limited=1)], 9.9, strict=False)
    assert not judge_bursts([burst_run(wall=1.0)], 1.0, strict=True)
    assert judge_bursts([burst_run(wall=0.99)], 1.0, strict=True)
    assert not judge_bursts([], 1.0, strict=True)


def test_status_words() -> None:
    assert (status_word(True), status_word(False), status_word(None)) == (MET, MISSED, NO_TARGET)
