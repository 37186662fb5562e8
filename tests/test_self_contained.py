"""A clone holds everything its tests and benchmarks read: nothing in tests/, testkit/ or bench/ points outside it.

Files beside the checkout (a ``../shared`` folder of reference material, say) are for people to
read; a test that reads them passes on one machine and skips or fails on a fresh clone.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SCANNED = ("tests", "testkit", "bench")
TEXT_SUFFIXES = {".py", ".md", ".json", ".txt", ".sh", ".toml", ".cfg", ".ini", ".html"}

# A folder named "shared" reached by a relative path or joined as a path component, or an absolute /work/ path.
_SHARED = re.compile(r"""\.\./+shared\b|\bshared/brave-fixtures\b|["']shared["']\s*/|/\s*["']shared["']|/work/""")
# Path(__file__) climbed with .parent or .parents[n]; whether it leaves the repository depends on the file's depth.
_CLIMB = re.compile(
    r"Path\(__file__\)(?:\.resolve\(\)|\.absolute\(\))?(?P<parents>(?:\.parent\b)*)(?:\.parents\[(?P<n>\d+)\])?"
)
# The repository root's parent, whatever the constant is called.
_ROOT_PARENT = re.compile(r"\b[A-Z_]*(?:ROOT|REPO)[A-Z_]*\.parents?\b")


def outside_references(relative: Path, text: str) -> list[str]:
    """The lines of ``text`` (a file at ``relative`` inside the repository) that reach outside the repository."""
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        climbs = [
            match.group("parents").count(".parent") + (int(match.group("n")) + 1 if match.group("n") else 0)
            for match in _CLIMB.finditer(line)
        ]
        leaves = any(climb > len(relative.parts) for climb in climbs)  # tests/x.py: 2 climbs reach the root
        if leaves or _SHARED.search(line) or _ROOT_PARENT.search(line):
            found.append(f"{relative}:{number}: {line.strip()}")
    return found


def scanned_files() -> list[Path]:
    this = Path(__file__).resolve()
    return sorted(
        path
        for folder in SCANNED
        for path in (REPO / folder).rglob("*")
        if path.is_file() and path.suffix in TEXT_SUFFIXES and path.resolve() != this
        if "__pycache__" not in path.parts
    )


def test_no_test_bench_or_testkit_file_reads_outside_the_repository() -> None:
    files = scanned_files()
    assert len(files) > 50  # the scan sees the suite, not an empty folder
    found = [hit for path in files for hit in outside_references(path.relative_to(REPO), path.read_text("utf-8"))]
    assert found == [], "files outside the repository are referenced:\n" + "\n".join(found)


@pytest.mark.parametrize(
    ("where", "line"),
    [
        ("tests/conftest.py", 'FIXTURES = REPO_ROOT.parent / "shared" / "brave-fixtures"'),
        ("tests/test_x.py", 'RECORDED = Path(__file__).resolve().parent.parent.parent / "page.json"'),
        ("tests/test_x.py", 'FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"'),
        ("bench/upstream.py", '"""when ``../shared/brave-fixtures/page.json`` is beside the checkout"""'),
        ("testkit/brave/x.py", "DATA = Path(__file__).parents[3]"),
        ("tests/test_x.py", 'SAMPLE = Path("/work/shared/reference/brave-api.md")'),
    ],
)
def test_the_scan_catches_each_way_out(where: str, line: str) -> None:
    assert outside_references(Path(where), line) != []


@pytest.mark.parametrize(
    ("where", "line"),
    [
        ("tests/test_x.py", "REPO = Path(__file__).resolve().parent.parent"),
        ("testkit/brave/x.py", "FIXTURES_DIR = Path(__file__).with_name('fixtures')"),
        ("testkit/brave/x.py", "ROOT = Path(__file__).parents[2]"),
        ("tests/test_x.py", "assert stats.shared == 4  # one shared attempt"),
    ],
)
def test_the_scan_lets_paths_inside_the_repository_through(where: str, line: str) -> None:
    assert outside_references(Path(where), line) == []
