"""README regions generated from results.json, never typed: the tables of runs of either kind (egs/mustc stage 8,
:mod:`punct.results.mustc`; egs/parczech stage 6, :mod:`punct.results.itn`; each results.json tells its kind) or of
``benchmarks/bench_am_data.py`` (AM dev WER by training hours, :mod:`punct.results.am_data`) or
``benchmarks/bench_streaming.py`` (F1 against latency by TDNN training variant, :mod:`punct.results.latency`) or
``benchmarks/bench_itn_streaming.py`` (egs/parczech's F1 against latency, :mod:`punct.results.itn_latency`) or
``benchmarks/bench_itn_live.py`` (egs/parczech's live captions on whole speeches, :mod:`punct.results.itn_live`) or
``benchmarks/bench_stream_offline.py`` (a stream at unbounded latency against stage 8,
:mod:`punct.results.stream_offline`) or ``benchmarks/bench_lookahead.py`` (BERT's F1 against the words it reads ahead,
:mod:`punct.results.lookahead`), the
part of a README between ``<!-- results:<name>:begin -->`` and ``<!-- results:<name>:end -->``, and the regions a
recipe's ``RESULTS/regions.yaml`` lists with the committed results.json they come from (rewritten or checked); a
region with ``groups`` (condition -> results.json) compares conditions in one table (:mod:`punct.results.curve`).
"""

from __future__ import annotations

import json
import logging
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from punct.results import am_data, curve, itn, itn_latency, itn_live, latency, lookahead, mustc, stream_offline
from punct.utils.atomic import atomic_write_text


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
    """The kind of a results.json, from its content: itn (egs/parczech stage 6), ensemble (egs/mustc stage 8),
    am_data (benchmarks/bench_am_data.py), streaming (benchmarks/bench_streaming.py), itn_streaming
    (benchmarks/bench_itn_streaming.py), itn_live (benchmarks/bench_itn_live.py), stream_offline
    (benchmarks/bench_stream_offline.py) or lookahead (benchmarks/bench_lookahead.py)."""
    results = json.loads(path.read_text(encoding="utf-8"))
    if results.get("kind") in (
        itn.KIND,
        am_data.KIND,
        latency.KIND,
        itn_latency.KIND,
        itn_live.KIND,
        stream_offline.KIND,
        lookahead.KIND,
    ):
        return results["kind"]
    if "systems" in results:
        return mustc.KIND
    raise ValueError(
        f"{path}: neither egs/mustc stage-8 results (with systems), egs/parczech stage-6 results (kind {itn.KIND!r}), "
        f"bench_am_data.py's (kind {am_data.KIND!r}), bench_streaming.py's (kind {latency.KIND!r}), "
        f"bench_itn_streaming.py's (kind {itn_latency.KIND!r}), bench_itn_live.py's (kind {itn_live.KIND!r}), "
        f"bench_stream_offline.py's (kind {stream_offline.KIND!r}) nor bench_lookahead.py's (kind {lookahead.KIND!r})"
    )


def tables_and_summary(paths: Sequence[Path], split: str, command: str = "") -> tuple[str, str, dict]:
    """(kind, the markdown tables with their caption, the summary) of runs of one kind."""
    kinds = sorted({results_kind(path) for path in paths})
    if len(kinds) > 1:
        raise ValueError(f"results of several kinds ({', '.join(kinds)}): one table per recipe")
    if kinds[0] == am_data.KIND:
        corpora = [corpus for path in paths for corpus in json.loads(path.read_text(encoding="utf-8"))["corpora"]]
        return kinds[0], am_data.render_tables({"kind": am_data.KIND, "corpora": corpora}), {}
    if kinds[0] == latency.KIND:
        return kinds[0], latency.truncation_tables(latency.read_streaming_runs(paths), command), {}
    if kinds[0] == stream_offline.KIND:
        return kinds[0], stream_offline.stream_offline_tables(paths, command), {}
    if kinds[0] == lookahead.KIND:
        return kinds[0], lookahead.lookahead_table(paths, command), {}
    if kinds[0] == itn_latency.KIND:
        return kinds[0], itn_latency.itn_latency_tables(itn_latency.read_itn_streaming(paths), command), {}
    if kinds[0] == itn_live.KIND:
        return kinds[0], itn_live.itn_live_tables(itn_live.read_itn_live(paths), command), {}
    if kinds[0] == itn.KIND:
        runs = [itn.read_itn_run(path, split) for path in paths]
        tables = itn.render_itn_tables(runs) + "\n" + itn.itn_caption(runs, command)
        data = itn.itn_summary(runs)
    else:
        runs = [mustc.read_run(path, split) for path in paths]
        tables = (
            mustc.render_tables(runs, split)
            + "\n"
            + mustc.caption(split, len(runs), command, any(r.stages for r in runs))
        )
        data = mustc.summary(runs, split)
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
    # another table of the same files: "alpha_by_latency" (bench_streaming.py's files: the ensemble's alpha chosen
    # per latency, punct.results.latency.alpha_by_latency_table)
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


def region_tables(region: Region) -> str:
    for result in region.results:
        if not result.is_file():
            raise FileNotFoundError(f"{result}: no such file (region {region.name})")
    if region.table == "alpha_by_latency":
        return latency.alpha_by_latency_table(region.results, region.command, region.split)
    if region.table:
        raise ValueError(f"region {region.name}: unknown table {region.table!r} (alpha_by_latency)")
    if region.groups and results_kind(region.results[0]) == itn.KIND:
        return itn.render_itn_groups(region.groups, region.split, region.command)
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
