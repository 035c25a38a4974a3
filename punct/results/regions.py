"""README regions generated from results.json, never typed: the part of a README between
``<!-- results:<name>:begin -->`` and ``<!-- results:<name>:end -->``, and the regions a recipe's
``RESULTS/regions.yaml`` lists with the committed results.json they come from (rewritten or checked).

Each results.json tells its kind.  A recipe's own tables are rendered here: the punctuation systems of a
stage-8 scoring (:mod:`punct.results.punct_systems`), the ITN systems of an ITN scoring
(:mod:`punct.results.itn_systems`), and a region with ``groups`` (condition -> results.json) compares conditions in
one table (:mod:`punct.results.curve`); ``table: glance`` over groups of several recipes' runs is the top README's
table of every recipe's default (:mod:`punct.results.glance`).  A study's tables live beside its benchmark
(``benchmarks/<study>/``): :data:`STUDY_TABLES` names the module of each study kind, imported by name only when a
region needs it, so the package never imports the benchmarks and runs without them.
"""

from __future__ import annotations

import importlib
import json
import logging
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from punct.results import curve, glance, itn_systems, punct_systems
from punct.utils.atomic import atomic_write_text

# A study's kind -> the module that renders its results.json (a checkout's benchmarks/<study>/, importable from the
# repository's root).  Each has ``KIND``, ``render(paths, command) -> str`` and, where a region may ask for another
# table of the same files (``table:`` in regions.yaml), ``TABLES``: name -> ``table(paths, command, split) -> str``.
STUDY_TABLES = {
    "am_data": "benchmarks.am_data.wer_by_hours",
    "streaming": "benchmarks.streaming.latency_table",
    "stream_offline": "benchmarks.streaming.stream_offline_table",
    "lookahead": "benchmarks.streaming.lookahead_table",
    "itn_streaming": "benchmarks.itn_streaming.latency_table",
    "itn_live": "benchmarks.itn_streaming.live_table",
    "scale": "benchmarks.scale.growth",
    "scale_plan": "benchmarks.scale.gpu_plan",
}


def study_tables(kind: str) -> ModuleType:
    """The module that renders a study's results of ``kind`` (:data:`STUDY_TABLES`)."""
    try:
        return importlib.import_module(STUDY_TABLES[kind])
    except ModuleNotFoundError as e:
        raise ModuleNotFoundError(
            f"results of kind {kind!r} are rendered by {STUDY_TABLES[kind]}, which a checkout holds: run from the "
            f"repository's root ({e})"
        ) from e


def replace_region(text: str, name: str, content: str, where: str = "README") -> str:
    """``text`` with the part between the ``results:<name>`` markers replaced by ``content``."""
    begin, end = f"<!-- results:{name}:begin -->", f"<!-- results:{name}:end -->"
    pattern = re.compile(re.escape(begin) + r".*?" + re.escape(end), flags=re.DOTALL)
    if not pattern.search(text):
        raise ValueError(f"{where}: no region between {begin} and {end}; add both marker lines where the table goes")
    return pattern.sub(lambda _: f"{begin}\n{content}{end}", text, count=1)


REGION_BEGIN = re.compile(r"<!-- results:([\w.-]+):begin -->")


def region_names(text: str) -> list[str]:
    """The names of the ``results:<name>`` regions of ``text``, in order."""
    return REGION_BEGIN.findall(text)


def region_content(text: str, name: str, where: str = "README") -> str:
    """The text between the ``results:<name>`` markers (without the marker lines)."""
    begin, end = f"<!-- results:{name}:begin -->", f"<!-- results:{name}:end -->"
    match = re.search(re.escape(begin) + r"\n(.*?)" + re.escape(end), text, flags=re.DOTALL)
    if match is None:
        raise ValueError(f"{where}: no region between {begin} and {end}")
    return match.group(1)


def results_kind(path: Path) -> str:
    """The kind of a results.json, from its content: a stage-8 scoring's punctuation systems (a ``systems`` key, no
    ``kind``), an ITN scoring's (``"kind": "itn"``) or a study's (:data:`STUDY_TABLES`)."""
    results = json.loads(path.read_text(encoding="utf-8"))
    if results.get("kind") == itn_systems.KIND or results.get("kind") in STUDY_TABLES:
        return results["kind"]
    if "systems" in results:
        return punct_systems.KIND
    raise ValueError(
        f"{path}: neither a stage-8 scoring's results (with systems), an ITN scoring's (kind {itn_systems.KIND!r}) "
        f"nor a study's (kind one of {', '.join(map(repr, STUDY_TABLES))})"
    )


def tables_and_summary(
    paths: Sequence[Path], split: str, command: str = "", brief: bool = False
) -> tuple[str, str, dict]:
    """(kind, the markdown tables with their caption, the summary) of runs of one kind; ``brief``: a recipe's F1
    table alone (``table: brief`` in regions.yaml), each run's facts left to its RESULTS.md."""
    kinds = sorted({results_kind(path) for path in paths})
    if len(kinds) > 1:
        raise ValueError(f"results of several kinds ({', '.join(kinds)}): one table per recipe")
    if kinds[0] in STUDY_TABLES:
        return kinds[0], study_tables(kinds[0]).render(paths, command), {}
    if kinds[0] == itn_systems.KIND:
        runs = [itn_systems.read_itn_run(path, split) for path in paths]
        tables = itn_systems.render_itn_tables(runs, brief) + "\n" + itn_systems.itn_caption(runs, command, brief)
        data = itn_systems.itn_summary(runs)
    else:
        runs = [punct_systems.read_run(path, split) for path in paths]
        tables = (
            punct_systems.render_tables(runs, split, brief)
            + "\n"
            + punct_systems.caption(split, len(runs), command, any(r.stages for r in runs) and not brief)
        )
        data = punct_systems.summary(runs, split)
    seeds = [r.seed for r in runs if r.seed is not None]
    if len(set(seeds)) < len(seeds):
        logging.warning("several runs share a seed: %s", seeds)
    return kinds[0], tables, data


@dataclass(frozen=True)
class Region:
    """One generated README region: ``results:<name>`` of ``readme``, from ``results`` made by ``command``."""

    name: str
    readme: Path
    results: tuple[Path, ...]
    command: str = ""
    split: str = "test"
    # condition -> its runs: a column per condition and split (punct.results.curve; split "both": dev and test)
    groups: dict[str, tuple[Path, ...]] | None = None
    # another table of the same files: "brief" (a recipe's F1 table alone), "glance" (groups of several recipes'
    # runs, punct.results.glance) or a study's
    # (e.g. "alpha_by_latency" of bench_streaming.py's files, benchmarks.streaming.latency_table)
    table: str = ""


def read_regions(path: Path) -> list[Region]:
    """The regions a ``RESULTS/regions.yaml`` lists (paths resolved against its folder)."""
    import yaml

    entries = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    regions = []
    for name, entry in entries.items():
        try:
            groups = None
            if "groups" in entry:
                groups = {k: tuple(path.parent / r for r in v) for k, v in entry["groups"].items()}
            results = [r for g in entry["groups"].values() for r in g] if groups else entry["results"]
            regions.append(
                Region(
                    name,
                    path.parent / entry["readme"],
                    tuple(path.parent / r for r in results),
                    entry.get("command", ""),
                    entry.get("split", "test"),
                    groups,
                    entry.get("table", ""),
                )
            )
        except (KeyError, TypeError, AttributeError) as e:
            raise ValueError(f"{path}: region {name!r} needs readme and results (or groups) ({e})") from e
    return regions


def other_table(region: Region) -> str:
    """The table ``region.table`` of a study's module (its ``TABLES``) of the region's files."""
    kind = results_kind(region.results[0])
    tables = getattr(study_tables(kind), "TABLES", {}) if kind in STUDY_TABLES else {}
    if region.table not in tables:
        raise ValueError(
            f"region {region.name}: unknown table {region.table!r} for results of kind {kind!r} ({', '.join(tables)})"
        )
    return tables[region.table](region.results, region.command, region.split)


def region_tables(region: Region) -> str:
    for result in region.results:
        if not result.is_file():
            raise FileNotFoundError(f"{result}: no such file (region {region.name})")
    if region.table == "glance":
        if not region.groups:
            raise ValueError(f"region {region.name}: table glance needs groups (configuration -> its runs)")
        return glance.glance_table(region.groups, region.split, region.command)
    if region.table == "brief" and not region.groups:
        return tables_and_summary(region.results, region.split, region.command, brief=True)[1]
    if region.table:
        return other_table(region)
    if region.groups and results_kind(region.results[0]) == itn_systems.KIND:
        return itn_systems.render_itn_groups(region.groups, region.split, region.command)
    if region.groups:
        splits = curve.SPLITS if region.split == "both" else (region.split,)
        return curve.render_curve(region.groups, region.command, splits)
    return tables_and_summary(region.results, region.split, region.command)[1]


def update_regions(path: Path, check: bool) -> int:
    """Rewrites (or with ``check`` compares) every region of ``path``; 1 when a checked region differs."""
    import difflib

    stale = 0
    for region in read_regions(path):
        text = region.readme.read_text(encoding="utf-8")
        tables = region_tables(region)
        if not check:
            atomic_write_text(region.readme, replace_region(text, region.name, tables, str(region.readme)))
            logging.info("%s: rewrote the results:%s region", region.readme, region.name)
            continue
        current = region_content(text, region.name, str(region.readme))
        if current != tables:
            stale += 1
            sys.stdout.writelines(
                difflib.unified_diff(
                    current.splitlines(keepends=True),
                    tables.splitlines(keepends=True),
                    f"{region.readme} results:{region.name}",
                    f"generated from {path}",
                )
            )
    if stale:
        logging.error("%d region(s) differ from their results.json: regenerate with --regions %s", stale, path)
    return 1 if stale else 0
