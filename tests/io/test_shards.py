"""punct.io.shards: kaldiio ark/scp shards written atomically, read back by key."""

from __future__ import annotations

import kaldiio
import numpy as np
import pytest

from punct.io.shards import MatrixReader, ShardWriter, is_shard_done, merge_scps, write_shard


def random_items(n, seed=0):
    rng = np.random.default_rng(seed)
    return [(f"utt{i}", rng.standard_normal((rng.integers(3, 30), 8)).astype(np.float32)) for i in range(n)]


@pytest.mark.parametrize("compression,tolerance", [("none", 0.0), ("two_byte", 1e-3), ("speech_feature", 0.1)])
def test_round_trip(tmp_path, compression, tolerance):
    items = random_items(5)
    assert write_shard(tmp_path / "emb.1", items, compression) == 5
    assert is_shard_done(tmp_path / "emb.1")
    reader = MatrixReader(tmp_path / "emb.1.scp")
    assert reader.keys() == [k for k, _ in items]
    for key, matrix in items:
        assert reader[key].shape == matrix.shape
        np.testing.assert_allclose(reader[key], matrix, atol=tolerance + 1e-7)
    # The scp is an ordinary Kaldi scp.
    assert set(kaldiio.load_scp(str(tmp_path / "emb.1.scp"))) == {k for k, _ in items}


def test_interrupted_writer_leaves_no_finished_shard(tmp_path):
    with pytest.raises(KeyboardInterrupt), ShardWriter(tmp_path / "emb.2") as writer:
        for key, matrix in random_items(3):
            writer.write(key, matrix)
        raise KeyboardInterrupt
    assert not is_shard_done(tmp_path / "emb.2")
    assert not (tmp_path / "emb.2.scp").exists() and not (tmp_path / "emb.2.ark").exists()
    assert list(tmp_path.iterdir()) == []


def test_bad_keys_are_rejected(tmp_path):
    with pytest.raises(ValueError, match="duplicate"):
        write_shard(tmp_path / "d", [("a", np.zeros((1, 1))), ("a", np.zeros((1, 1)))])
    with pytest.raises(ValueError, match="white space"):
        write_shard(tmp_path / "w", [("a b", np.zeros((1, 1)))])


def test_merge_scps_and_duplicate_detection(tmp_path):
    items = random_items(6)
    write_shard(tmp_path / "emb.1", items[:3])
    write_shard(tmp_path / "emb.2", items[3:])
    assert merge_scps([tmp_path / "emb.1.scp", tmp_path / "emb.2.scp"], tmp_path / "emb.scp") == 6
    reader = MatrixReader(tmp_path / "emb.scp")
    np.testing.assert_array_equal(reader["utt4"], items[4][1])
    with pytest.raises(ValueError, match=r"emb\.1\.scp:1: key utt0"):
        merge_scps([tmp_path / "emb.1.scp", tmp_path / "emb.1.scp"], tmp_path / "dup.scp")


def test_malformed_scp_line_names_file_and_line(tmp_path):
    (tmp_path / "bad.scp").write_text("a x.ark:1\nbroken\n")
    with pytest.raises(ValueError, match=r"bad\.scp:2"):
        MatrixReader(tmp_path / "bad.scp")


def test_temporary_arks_of_killed_writers_are_removed(tmp_path):
    """A writer killed with SIGKILL leaves its .emb.1.ark.<pid>.tmp; the next writer of that shard deletes it
    and keeps a live process' temporary file and other shards' ones."""
    import signal
    import subprocess
    import sys

    script = (
        "import sys, time, numpy as np\n"
        "from punct.io.shards import ShardWriter\n"
        "w = ShardWriter(sys.argv[1]).__enter__()\n"
        "w.write('utt0', np.zeros((3, 2), dtype=np.float32))\n"
        "print('ready', flush=True)\n"
        "time.sleep(60)\n"
    )
    writer = subprocess.Popen(
        [sys.executable, "-c", script, str(tmp_path / "emb.1")], stdout=subprocess.PIPE, text=True
    )
    assert writer.stdout.readline().strip() == "ready"
    orphan = tmp_path / f".emb.1.ark.{writer.pid}.tmp"
    assert orphan.exists()
    writer.send_signal(signal.SIGKILL)
    writer.wait()

    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        live = tmp_path / f".emb.1.ark.{sleeper.pid}.tmp"
        other_shard = tmp_path / ".emb.10.ark.1.tmp"
        live.write_bytes(b"x")
        other_shard.write_bytes(b"x")
        write_shard(tmp_path / "emb.1", random_items(2))
        assert not orphan.exists()
        assert live.exists() and other_shard.exists()
        assert is_shard_done(tmp_path / "emb.1")
    finally:
        sleeper.kill()
        sleeper.wait()
