"""punct.results.regions: a study's tables found by its results.json's kind, in the module beside its benchmark."""

from __future__ import annotations

import importlib
import json

import pytest

from punct.results.regions import STUDY_TABLES, Region, region_tables, results_kind


@pytest.mark.parametrize("kind", sorted(STUDY_TABLES))
def test_each_study_kind_names_the_module_that_renders_it(kind):
    module = importlib.import_module(STUDY_TABLES[kind])
    assert kind == module.KIND
    assert callable(module.render)


def test_a_kind_nobody_renders_is_an_error(tmp_path):
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"kind": "nothing"}))
    with pytest.raises(ValueError, match="a study's"):
        results_kind(path)
    path.write_text(json.dumps({"kind": "lookahead"}))
    assert results_kind(path) == "lookahead"


def test_a_table_the_study_does_not_offer_is_an_error(tmp_path):
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"kind": "lookahead"}))
    region = Region("x", tmp_path / "README.md", (path,), table="alpha_by_latency")
    with pytest.raises(ValueError, match="unknown table 'alpha_by_latency' for results of kind 'lookahead'"):
        region_tables(region)


def test_the_glance_table_needs_groups_and_renders_them(tmp_path):
    from tests.results.test_glance import MUSTC_RUNS

    region = Region("glance", tmp_path / "README.md", tuple(MUSTC_RUNS), table="glance")
    with pytest.raises(ValueError, match="table glance needs groups"):
        region_tables(region)
    grouped = Region("glance", tmp_path / "README.md", tuple(MUSTC_RUNS), table="glance", groups={"a": MUSTC_RUNS})
    assert "| a | TDNN |" in region_tables(grouped)


def test_a_brief_region_is_the_f1_table_alone(tmp_path):
    from tests.results.test_glance import ITN_RUNS, MUSTC_RUNS

    for runs, first_header in ((MUSTC_RUNS, "| Model | F1 |"), (ITN_RUNS, "| Model | [,] F1 |")):
        full = region_tables(Region("r", tmp_path / "README.md", tuple(runs)))
        brief = region_tables(Region("r", tmp_path / "README.md", tuple(runs), table="brief"))
        tables = brief.split("\n\n")
        assert len(tables) == 2 and tables[0].startswith(first_header)  # one table, then the caption
        assert full.startswith(tables[0]) and len(full.split("\n\n")) > 2
        assert "| wall time |" in full and "| wall time |" not in brief
