"""The package as pip sees it: pyproject.toml's console commands resolve, every third-party module that punct
imports belongs to a declared dependency, and constraints.txt pins every dependency to one version."""

from __future__ import annotations

import ast
import importlib
import importlib.metadata
import re
import sys
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def _name(requirement: str) -> str:
    """A requirement's distribution name, normalised (PEP 503)."""
    return re.sub(r"[-_.]+", "-", re.match(r"[A-Za-z0-9_.-]+", requirement).group(0)).lower()


def _imported_top_level_modules() -> dict[str, str]:
    """Top-level module -> the first punct file that imports it (absolute imports only)."""
    found: dict[str, str] = {}
    for path in sorted((ROOT / "punct").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                found.setdefault(name.split(".")[0], str(path.relative_to(ROOT)))
    return found


def test_console_commands_resolve_to_main_functions():
    scripts = PROJECT["scripts"]
    assert {"punct-punctuate", "punct-punctuate-itn", "punct-export", "punct-results-table"} <= set(scripts)
    for command, target in scripts.items():
        module, function = target.split(":")
        assert callable(getattr(importlib.import_module(module), function)), f"{command} -> {target}"


def test_every_third_party_import_is_a_declared_dependency():
    declared = {_name(r) for r in PROJECT["dependencies"]}
    distributions = importlib.metadata.packages_distributions()
    undeclared = []
    for module, where in _imported_top_level_modules().items():
        if module == "punct" or module in sys.stdlib_module_names:
            continue
        owners = {_name(d) for d in distributions.get(module, [])}
        if not owners & declared:
            undeclared.append(f"{module} ({where}; distributions: {sorted(owners) or 'not installed'})")
    assert not undeclared, "imported but not in pyproject.toml's dependencies: " + ", ".join(undeclared)


def test_constraints_pin_every_dependency():
    pins = {}
    for line in (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, _, version = line.partition("==")
            assert version, f"constraints.txt: {line!r} is not name==version"
            pins[_name(name)] = version
    requirements = PROJECT["dependencies"] + PROJECT["optional-dependencies"]["dev"]
    unpinned = [r for r in requirements if _name(r) not in pins]
    assert not unpinned, f"constraints.txt lacks {unpinned}"
    assert pins["torch"] == "2.13.0"
