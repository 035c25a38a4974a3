"""egs/parczech/RESULTS/mm_small_dev/README.md: its dev table is what punct.bin.mm_dev_table makes of the committed
trainings, in the README's order (a hand edit fails)."""

from __future__ import annotations

import re
from pathlib import Path

from punct.bin.mm_dev_table import markdown_table

FOLDER = Path(__file__).resolve().parents[2] / "egs" / "parczech" / "RESULTS" / "mm_small_dev"


def test_the_dev_table_is_generated_from_the_committed_trainings():
    readme = (FOLDER / "README.md").read_text()
    region = re.search(r"<!-- mm_dev_table:begin -->\n(.*?)<!-- mm_dev_table:end -->", readme, re.S)
    assert region, "no mm_dev_table region"
    names = [line.split(" | ")[0].removeprefix("| ") for line in region.group(1).splitlines()[2:]]
    assert sorted(names) == sorted(p.name for p in FOLDER.iterdir() if p.is_dir())  # every training, once
    assert region.group(1) == markdown_table([FOLDER / name for name in names])
