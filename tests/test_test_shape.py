"""The tests, the fakes and the bench keep the shape of the code they test: no import cycles, small files."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.shape import MAX_MODULE_LINES, import_cycles, import_graph, line_count

REPO = Path(__file__).resolve().parent.parent
HELPERS = ("testkit", "bench")
SIZED = ("tests", "testkit", "bench", "scripts")


def _python_files(*folders: str) -> list[Path]:
    return sorted(p for folder in folders for p in (REPO / folder).rglob("*.py") if "__pycache__" not in p.parts)


def test_testkit_and_bench_have_no_import_cycle() -> None:
    graph = import_graph(REPO, _python_files(*HELPERS))
    assert {name.split(".")[0] for name in graph} == set(HELPERS)
    assert any("testkit.brave.routes.search" in targets for targets in graph.values())  # the graph sees imports
    assert import_cycles(graph) == []


def test_every_test_fake_bench_and_script_file_is_small_enough_to_read_in_one_sitting() -> None:
    files = _python_files(*SIZED)
    assert len(files) > 100
    sizes = {str(p.relative_to(REPO)): line_count(p) for p in files}
    assert {name: n for name, n in sizes.items() if n >= MAX_MODULE_LINES} == {}


def test_the_default_run_draws_the_same_examples_every_time_and_deep_is_opt_in() -> None:
    """A newcomer's first ``pytest`` passes or fails the same way on every run (a random find belongs to an
    opt-in ``--hypothesis-profile=deep`` run, which draws ten times as many fresh examples)."""
    from hypothesis import settings

    from tests.fuzz.checks import ARGUMENT_FUZZ, BODY_FUZZ, examples

    if not settings().derandomize:
        pytest.skip("this run opted into --hypothesis-profile=deep")
    assert ARGUMENT_FUZZ.derandomize and BODY_FUZZ.derandomize
    assert examples(100) == 100
    assert settings.get_profile("deep").derandomize is False
    assert settings.get_profile("deep").max_examples == 10 * settings.get_profile("repeatable").max_examples
