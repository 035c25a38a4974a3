"""tests/ mirrors punct/ (icefall's habit): the tests of ``punct/<area>/<module>.py`` live in
``tests/<area>/test_<module>.py`` (``tests/models/<model>/`` for ``punct/models/<model>/``, ``tests/bin/`` for
the entry points), those of ``punct/labels.py`` in ``tests/test_labels.py``.

A test file may add an aspect to its module's name (``test_train_gpu_options.py`` tests ``train.py``'s GPU
options) so that one module's slow or special tests can stay in a file of their own.  The folders that mirror
nothing: ``e2e`` (whole recipe runs), ``scripts`` (the shell tools of utils/ and steps/), ``gpu`` (the GPU smoke
run) and ``helpers`` (test code shared between folders).  ``tests/benchmarks/`` mirrors ``benchmarks/`` the same
way: the tests of a study module ``benchmarks/<study>/<module>.py`` (what a benchmark measures with, the tables of
its results) live in ``tests/benchmarks/<study>/test_<module>.py``.  Top-level ``test_layout*.py`` and ``test_docs.py``
check the repository as a whole (the package, the documentation), not one module.
"""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
NOT_MIRRORED = {
    "e2e": "whole recipe runs",
    "scripts": "utils/ and steps/ shell tools",
    "gpu": "GPU smoke run",
    "helpers": "shared test code",
}
ALLOWED_IN_MIRROR = {"__init__.py", "conftest.py"}
BENCHMARKS = "benchmarks"  # tests/benchmarks/ mirrors benchmarks/, not punct/benchmarks/


def _modules(package: Path) -> list[str]:
    return sorted(p.stem for p in package.glob("*.py") if p.name != "__init__.py")


def _names_a_module(stem: str, modules: list[str]) -> bool:
    name = stem[len("test_") :]
    return any(name == m or name.startswith(m + "_") for m in modules)


def layout_problems(tests: Path, punct: Path, benchmarks: Path | None = None) -> list[str]:
    """What breaks the mirror between ``tests`` and ``punct`` (``tests/benchmarks`` and ``benchmarks``, by default
    beside ``punct``), one line each (empty: none)."""
    benchmarks = benchmarks if benchmarks is not None else punct.parent / BENCHMARKS
    problems = []
    folders = [
        d
        for d in sorted(tests.rglob("*"))
        if d.is_dir() and d.name != "__pycache__" and not d.name.startswith(".") and "__pycache__" not in d.parts
    ]
    for folder in [tests, *folders]:
        rel = folder.relative_to(tests)
        if not (folder / "__init__.py").is_file():
            problems.append(f"tests/{rel}: no __init__.py (every test folder is a package)")
        if rel.parts and rel.parts[0] in NOT_MIRRORED:
            continue
        root, parts = (benchmarks, rel.parts[1:]) if rel.parts[:1] == (BENCHMARKS,) else (punct, rel.parts)
        package = root.joinpath(*parts)
        mirrored = "/".join((root.name, *parts))
        if not (package / "__init__.py").is_file():
            exempt = sorted(NOT_MIRRORED)
            problems.append(f"tests/{rel}: {mirrored} is no subpackage (non-mirroring folders: {exempt})")
            continue
        modules = _modules(package)
        for path in sorted(folder.glob("*.py")):
            if path.name in ALLOWED_IN_MIRROR:
                continue
            where = f"tests/{rel}/{path.name}" if rel.parts else f"tests/{path.name}"
            if not path.stem.startswith("test_"):
                problems.append(f"{where}: not a test file (shared test code goes to tests/helpers/)")
            elif not rel.parts and path.stem.startswith(("test_layout", "test_docs")):
                continue
            elif not _names_a_module(path.stem, modules):
                problems.append(f"{where}: names no module of {mirrored}/ ({', '.join(modules)})")
    return problems


def test_tests_mirror_the_package():
    problems = layout_problems(REPO / "tests", REPO / "punct")
    assert not problems, "\n".join(problems)


def test_the_check_finds_a_paper_named_folder_and_a_stray_file(tmp_path):
    punct, tests = tmp_path / "punct", tmp_path / "tests"
    for package in (punct, punct / "am", tests, tests / "am", tests / "itn", tests / "e2e"):
        package.mkdir(parents=True, exist_ok=True)
        (package / "__init__.py").touch()
    for path in (
        punct / "am" / "train.py",
        tests / "am" / "test_train_gpu_options.py",
        tests / "e2e" / "test_x.py",
        tests / "test_layout.py",
    ):
        path.touch()
    assert layout_problems(tests, punct) == [
        "tests/itn: punct/itn is no subpackage (non-mirroring folders: ['e2e', 'gpu', 'helpers', 'scripts'])"
    ]
    (tests / "am" / "test_am_training.py").touch()
    (tests / "am" / "helpers.py").touch()
    (tests / "test_metrics.py").touch()
    assert layout_problems(tests, punct) == [
        "tests/test_metrics.py: names no module of punct/ ()",
        "tests/am/helpers.py: not a test file (shared test code goes to tests/helpers/)",
        "tests/am/test_am_training.py: names no module of punct/am/ (train)",
        "tests/itn: punct/itn is no subpackage (non-mirroring folders: ['e2e', 'gpu', 'helpers', 'scripts'])",
    ]


def test_tests_of_a_study_mirror_its_folder_of_benchmarks(tmp_path):
    punct, tests, benchmarks = tmp_path / "punct", tmp_path / "tests", tmp_path / "benchmarks"
    for package in (punct, tests, tests / "benchmarks", tests / "benchmarks" / "streaming", benchmarks):
        package.mkdir(parents=True, exist_ok=True)
        (package / "__init__.py").touch()
    (benchmarks / "streaming").mkdir()
    (benchmarks / "streaming" / "measure.py").touch()
    (tests / "benchmarks" / "streaming" / "test_measure.py").touch()
    assert layout_problems(tests, punct) == [
        "tests/benchmarks/streaming: benchmarks/streaming is no subpackage "
        "(non-mirroring folders: ['e2e', 'gpu', 'helpers', 'scripts'])"
    ]
    (benchmarks / "streaming" / "__init__.py").touch()
    assert layout_problems(tests, punct) == []
    (tests / "benchmarks" / "streaming" / "test_tables.py").touch()
    assert layout_problems(tests, punct) == [
        "tests/benchmarks/streaming/test_tables.py: names no module of benchmarks/streaming/ (measure)"
    ]
