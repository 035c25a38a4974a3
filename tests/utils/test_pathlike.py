"""punct.utils.pathlike: the modules a shell step runs for a small job start without lhotse and torch (importing
torch takes ~3 s of a 2-core machine): the shard merge of steps/dump_bert.sh, the dev-WER check of
steps/train_am.sh."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize("module", ["punct.io.shards", "punct.bin.check_am_wer", "punct.am.config"])
def test_a_light_step_does_not_import_torch(module):
    code = f"import sys, {module}; print(sorted(m for m in ('torch', 'lhotse') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
