"""egs/parczech/run.sh: every option of the configuration section is documented in --help."""

import re
import subprocess
from pathlib import Path

RUN = Path(__file__).resolve().parents[2] / "egs" / "parczech" / "run.sh"


def test_help_lists_every_option():
    text = RUN.read_text()
    section = text.split("# Begin configuration section.")[1].split("# End configuration section.")[0]
    names = re.findall(r"^([a-z_]+)=", section, flags=re.M)
    assert "words_from" in names and "stage" in names
    proc = subprocess.run(["bash", str(RUN), "--help"], cwd=RUN.parent, capture_output=True, text=True)
    help_text = proc.stdout + proc.stderr
    for name in names:
        assert f"--{name.replace('_', '-')}" in help_text, name
    assert "segments" in help_text
