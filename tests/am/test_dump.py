"""Layer-12 dumps: shard round trip, frame alignment, an interrupted job, skip and merge."""

import dataclasses
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from lhotse import load_manifest

from punct.am.checkpoint import AmTrainState, load_model, save_checkpoint
from punct.am.config import AmConfig
from punct.am.dataset import cut_words, load_split
from punct.am.dump import dump_shard
from punct.am.infer import run_model
from punct.am.model import EMBEDDING_LAYER, build_model
from punct.am.tokens import TokenTable
from punct.features.compute import load_cut_features
from punct.io.shards import MatrixReader, is_shard_done, shard_paths
from tests.helpers.espeak_corpus import cached_corpus, espeak_available

pytestmark = pytest.mark.skipif(not espeak_available(), reason="espeak-ng/sox not installed")
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def am_dir(tmp_path_factory):
    """A randomly initialised tiny AM saved as a trained one would be."""
    fbank = cached_corpus() / "fbank"
    cuts, _ = load_split(fbank, "train", "mustc")
    tokens = TokenTable.from_words(cut_words(c) for c in cuts)
    config = AmConfig(  # strided at inference, as the mini recipe's AM
        model=dataclasses.replace(
            AmConfig().model, dim=32, bottleneck_dim=8, prefinal_small_dim=16, prefinal_big_dim=32, frame_subsample=3
        ),
        ctc_subsample=3,
    )
    torch.manual_seed(0)
    model = build_model(config, len(tokens))
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm1d):
                m.running_var.uniform_(0.5, 2.0)
    out = tmp_path_factory.mktemp("am")
    save_checkpoint(
        out / "best-valid-loss.pt", model=model, optimizer=None, state=AmTrainState(), config=config, tokens=tokens
    )
    return out


def test_shard_round_trip_frames_match_features(am_dir, tmp_path):
    fbank = cached_corpus() / "fbank"
    model, _ = load_model(am_dir / "best-valid-loss.pt")
    cuts, cmvn = load_split(fbank, "dev", "mustc")
    dump_shard(model, list(cuts), cmvn, tmp_path / "none" / "emb.1", EMBEDDING_LAYER, "none")
    dump_shard(model, list(cuts), cmvn, tmp_path / "two" / "emb.1", EMBEDDING_LAYER, "two_byte")
    exact = MatrixReader(shard_paths(tmp_path / "none" / "emb.1")[1])
    packed = MatrixReader(shard_paths(tmp_path / "two" / "emb.1")[1])
    assert exact.keys() == [c.id for c in cuts]
    for cut in cuts:
        feats = load_cut_features(cut, cmvn)
        expected = run_model(model, feats, layer=EMBEDDING_LAYER)
        assert exact[cut.id].shape == (feats.shape[0], 32)
        assert np.array_equal(exact[cut.id], expected)
        span = expected.max() - expected.min()
        assert np.abs(packed[cut.id] - expected).max() <= 1e-4 * span + 1e-6
    assert (tmp_path / "two" / "emb.1.ark").stat().st_size < 0.6 * (tmp_path / "none" / "emb.1.ark").stat().st_size


def _dump_cmd(am_dir, out_dir, *extra):
    fbank = cached_corpus() / "fbank"
    return [
        sys.executable,
        "-m",
        "punct.bin.dump_am_embeddings",
        "--fbank-dir",
        str(fbank),
        "--prefix",
        "mustc",
        "--am-dir",
        str(am_dir),
        "--out-dir",
        str(out_dir),
        "--splits",
        "train",
        "--compression",
        "none",
        "--device",
        "cpu",
        *extra,
    ]


def _env():
    return dict(os.environ, PYTHONPATH=str(REPO), PYTHONWARNINGS="ignore")


def test_killed_job_leaves_no_finished_shard_and_rerun_matches(am_dir, tmp_path):
    killed, clean = tmp_path / "killed", tmp_path / "clean"
    proc = subprocess.Popen(
        _dump_cmd(am_dir, killed, "--job", "1", "--nj", "1", "--throttle", "2"),
        env=_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.time() + 120
        # wait until the job has written at least one matrix to its temporary ark
        while time.time() < deadline:
            tmp = list((killed / "train").glob(".emb.1.ark.*.tmp"))
            if tmp and tmp[0].stat().st_size > 0:
                break
            assert proc.poll() is None, "dump finished before it could be killed"
            time.sleep(0.2)
        else:
            pytest.fail("the dump job wrote nothing within 120 s")
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    prefix = killed / "train" / "emb.1"
    ark, scp = shard_paths(prefix)
    assert not is_shard_done(prefix) and not ark.exists() and not scp.exists()
    subprocess.run(
        _dump_cmd(am_dir, killed, "--job", "1", "--nj", "1"),
        env=_env(),
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    for job in (1, 2):
        subprocess.run(
            _dump_cmd(am_dir, clean, "--job", str(job), "--nj", "2"),
            env=_env(),
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    assert is_shard_done(prefix)
    a = MatrixReader(scp)
    b = MatrixReader(shard_paths(clean / "train" / "emb.1")[1], shard_paths(clean / "train" / "emb.2")[1])
    assert sorted(a.keys()) == sorted(b.keys()) and len(a) == 9
    for key in list(a.keys()):  # a kaldiio reader: iterating it yields positions, not keys
        assert np.array_equal(a[key], b[key]), key
    # a finished shard is skipped on a re-run
    mtime = ark.stat().st_mtime_ns
    log = subprocess.run(
        _dump_cmd(am_dir, killed, "--job", "1", "--nj", "1"), env=_env(), check=True, capture_output=True, text=True
    ).stderr
    assert "is done; skipping" in log and ark.stat().st_mtime_ns == mtime
    # merge: one scp whose keys are exactly the cut ids
    subprocess.run(
        _dump_cmd(am_dir, clean, "--nj", "2", "--merge"),
        env=_env(),
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    cuts = load_manifest(cached_corpus() / "fbank" / "mustc_cuts_train.jsonl.gz")
    assert MatrixReader(clean / "train" / "emb.scp").keys() == [c.id for c in cuts]


def test_a_dump_with_another_layer_is_redone(am_dir, tmp_path):
    """The merge records what the shards were made from (source.json); a re-run with another --layer redoes
    finished shards instead of skipping them, and records the new layer."""
    from punct.io.sources import AcousticSource, read_source

    out = tmp_path / "emb"
    for args in (("--job", "1", "--nj", "1"), ("--nj", "1", "--merge")):
        subprocess.run(
            _dump_cmd(am_dir, out, "--layer", "12", *args),
            env=_env(),
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    source = read_source(out / "train", AcousticSource)
    assert (source.layer, source.compression, source.norm_vars, source.frame_subsample) == (12, "none", False, 3)
    shard = MatrixReader(out / "train" / "emb.scp")
    key = shard.keys()[0]
    layer12 = shard[key]
    log = subprocess.run(
        _dump_cmd(am_dir, out, "--layer", "12", "--job", "1", "--nj", "1"),
        env=_env(),
        check=True,
        capture_output=True,
        text=True,
    ).stderr
    assert "is done; skipping" in log
    log = subprocess.run(
        _dump_cmd(am_dir, out, "--layer", "8", "--job", "1", "--nj", "1"),
        env=_env(),
        check=True,
        capture_output=True,
        text=True,
    ).stderr
    assert "dumped with other options" in log and "is done; skipping" not in log
    subprocess.run(
        _dump_cmd(am_dir, out, "--layer", "8", "--nj", "1", "--merge"),
        env=_env(),
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    assert read_source(out / "train", AcousticSource).layer == 8
    assert not np.allclose(MatrixReader(out / "train" / "emb.scp")[key], layer12)


def test_the_throughput_benchmark_reads_cuts_only_up_to_its_audio():
    """Stage 4's merge times a minute of audio on a lazily read manifest: no cut after that minute is read."""
    from punct.am.dump import benchmark_throughput

    cuts, cmvn = load_split(cached_corpus() / "fbank", "train", "mustc", lazy=True)
    taken: list[str] = []

    def read(cuts=cuts):
        for cut in cuts:
            taken.append(cut.id)
            yield cut

    first = next(iter(cuts)).duration
    config = REPO / "egs" / "mustc" / "conf" / "am_mini.yaml"
    stats = benchmark_throughput(config, read(), cmvn, 30, EMBEDDING_LAYER, max_audio_seconds=first + 0.01)
    assert len(taken) == 2 < len(cuts) and stats["audio_seconds"] > first
