"""Stage 1 (punct.features.compute) on a tiny espeak corpus: cut ids, frame counts, stored features,
lhotse-valid manifests that lhotse's own loaders read, and the project's snip_edges frame counts."""

import types

import numpy as np
import pytest
from lhotse import CutSet, load_manifest
from lhotse.features.base import Features
from lhotse.features.io import LilcomChunkyWriter
from lhotse.qa import validate_cut_set, validate_features
from lhotse.utils import compute_num_frames, fastcopy

from punct.features.cmvn import SpeakerCmvn
from punct.features.compute import cuts_path, feature_frames, load_cut_features, pad_to_lhotse_frames
from punct.features.extractor import KnfMfcc, expected_num_frames
from tests.helpers.espeak_corpus import cached_corpus, compute_fbank, espeak_available

SPLITS = ("train", "dev", "test")
needs_espeak = pytest.mark.skipif(not espeak_available(), reason="espeak-ng/sox not installed")


@pytest.fixture(scope="module")
def fresh_fbank(tmp_path_factory):
    """Stage 1 by the current code (the entry point's functions, 2 jobs + merge) on the cached corpus's
    stage-0 manifests; the cached corpus's own fbank/ may predate the current manifest layout."""
    fbank = tmp_path_factory.mktemp("stage1") / "fbank"
    compute_fbank(cached_corpus() / "manifests", fbank)
    return fbank


@needs_espeak
@pytest.mark.parametrize("which", ["cached", "fresh"])
def test_stage1_cuts_match_supervisions_and_frame_convention(which, request):
    root = cached_corpus()
    fbank = root / "fbank" if which == "cached" else request.getfixturevalue("fresh_fbank")
    for split in SPLITS:
        sups = load_manifest(root / "manifests" / f"mustc_supervisions_{split}.jsonl.gz")
        cuts = load_manifest(cuts_path(fbank, split, "mustc"))
        assert [c.id for c in cuts] == [s.id for s in sups]
        cmvn = SpeakerCmvn.load(fbank / f"cmvn_{split}.json")
        for cut, sup in zip(cuts, sups):
            assert cut.start == pytest.approx(sup.start) and cut.duration == pytest.approx(sup.duration)
            assert cut.supervisions[0].custom["words"] == sup.custom["words"]
            feats = load_cut_features(cut)
            audio = cut.load_audio()
            assert feats.shape == (expected_num_frames(audio.shape[1]), 40) == (feature_frames(cut), 40)
            # lilcom storage is lossy but close to a fresh extraction of the same samples
            fresh = KnfMfcc().extract(audio, 16000)
            assert np.abs(feats - fresh).max() < 0.05 * np.abs(fresh).max()
            assert np.allclose(load_cut_features(cut, cmvn), cmvn.apply(sup.speaker, feats))


@pytest.mark.parametrize("num_samples", [400, 401, 479, 480, 559, 560, 16000, 22597, *range(600, 40000, 997)])
def test_padding_makes_the_features_manifest_lhotse_consistent(num_samples):
    """S snip_edges frames + copies of the last one = lhotse's round(duration / frame_shift), which
    lhotse.qa checks exactly; feature_frames recovers S from the manifest (and S = L - 2 always)."""
    snip = expected_num_frames(num_samples)
    feats = np.random.default_rng(num_samples).normal(size=(snip, 3)).astype(np.float32)
    stored = pad_to_lhotse_frames(feats, num_samples, 0.01, 16000)
    duration = round(num_samples / 16000, 8)
    assert stored.shape == (compute_num_frames(duration, 0.01, 16000), 3) == (snip + 2, 3)
    assert np.array_equal(stored[:snip], feats) and (stored[snip:] == feats[-1]).all()
    manifest = Features(
        type="kaldi-native-mfcc",
        num_frames=stored.shape[0],
        num_features=3,
        frame_shift=0.01,
        sampling_rate=16000,
        start=0.5,
        duration=duration,
        storage_type="lilcom_chunky",
        storage_path="unused.lca",
        storage_key="0",
        recording_id="r",
        channels=0,
    )
    validate_features(manifest, feats_data=stored)
    assert feature_frames(types.SimpleNamespace(id="c", features=manifest)) == snip
    # a manifest of the earlier layout (num_frames = S, not lhotse-valid) has the same S
    old = fastcopy(manifest, num_frames=snip)
    assert feature_frames(types.SimpleNamespace(id="c", features=old)) == snip
    with pytest.raises(AssertionError, match="manifest is inconsistent"):
        validate_features(old, feats_data=feats)


@needs_espeak
def test_stage1_manifests_pass_lhotse_validation_and_collation(fresh_fbank):
    """The cuts of stage 1 pass lhotse.qa with the data read, lhotse's stock collation batches them
    (cut.num_frames = L rows, right-padded), and its rows t < S are the project's frames."""
    from lhotse.dataset.collation import collate_features

    for split in SPLITS:
        cuts = load_manifest(cuts_path(fresh_fbank, split, "mustc"))
        validate_cut_set(cuts, read_data=True)
        assert len({c.num_frames for c in cuts}) > 1  # the batch below pads (MixedCut + PaddingCut)
        batch, lens = collate_features(cuts)
        assert batch.shape == (len(cuts), max(c.num_frames for c in cuts), 40)
        for i, cut in enumerate(cuts):
            ours = load_cut_features(cut)
            snip = expected_num_frames(cut.num_samples)
            assert ours.shape[0] == feature_frames(cut) == snip == cut.num_frames - 2 == int(lens[i]) - 2
            assert cut.features.num_frames == cut.num_frames == compute_num_frames(cut.duration, 0.01, 16000)
            theirs = batch[i, : lens[i]].numpy()
            assert np.array_equal(theirs[:snip], ours)  # same stored rows, no shift
            # the padding repeats the last frame (lilcom stores each copy to its own rounding)
            assert np.abs(theirs[snip:] - ours[-1]).max() < 0.01 * np.abs(ours).max()
            assert np.array_equal(cut.load_features(), theirs)


@needs_espeak
def test_project_loaders_see_snip_edges_frames(fresh_fbank):
    """CMVN, the CTC dataset and the CTC length filter count S frames per cut, not lhotse's L = S + 2."""
    from punct.am.dataset import CtcDataset, usable_cuts
    from punct.am.tokens import TokenTable

    cuts = load_manifest(cuts_path(fresh_fbank, "train", "mustc"))
    snip = [expected_num_frames(c.num_samples) for c in cuts]
    cmvn = SpeakerCmvn.load(fresh_fbank / "cmvn_train.json")
    for speaker, stats in cmvn.stats.items():
        assert stats.count == sum(n for c, n in zip(cuts, snip) if c.supervisions[0].speaker == speaker)
    tokens = TokenTable.from_words(c.supervisions[0].custom["words"] for c in cuts)
    batch = CtcDataset(cmvn, tokens)[cuts]
    assert dict(zip(batch["ids"], batch["feat_lens"].tolist())) == {c.id: n for c, n in zip(cuts, snip)}
    # one word of n alternating characters needs n CTC frames: kept with n = S, dropped with n = S + 1
    ab = TokenTable.from_words([["ab"]])

    def with_chars(cut, n):
        sup = cut.supervisions[0]
        return fastcopy(cut, supervisions=[fastcopy(sup, custom={**sup.custom, "words": [("ab" * n)[:n]]})])

    assert len(usable_cuts(CutSet.from_cuts([with_chars(cuts[0], snip[0])]), ab)) == 1
    assert len(usable_cuts(CutSet.from_cuts([with_chars(cuts[0], snip[0] + 1)]), ab)) == 0


@needs_espeak
def test_manifests_of_the_earlier_layout_still_load(fresh_fbank, tmp_path):
    """Cuts written the way stage 1 wrote them before the lhotse padding (num_frames = S, S rows stored)
    give the same matrices and frame counts to the project's loaders."""
    cuts = load_manifest(cuts_path(fresh_fbank, "dev", "mustc"))
    old_cuts = []
    with LilcomChunkyWriter(tmp_path / "old.lca") as writer:
        for cut in cuts:
            feats = load_cut_features(cut)
            key = writer.write(cut.id, feats)
            old_cuts.append(
                fastcopy(
                    cut,
                    features=fastcopy(
                        cut.features, num_frames=feats.shape[0], storage_path=str(tmp_path / "old.lca"), storage_key=key
                    ),
                )
            )
    for old, new in zip(old_cuts, cuts):
        assert old.features.num_frames == feature_frames(old) == feature_frames(new) == new.features.num_frames - 2
        assert np.allclose(load_cut_features(old), load_cut_features(new), atol=1e-2)


def write_stage0_manifests(folder, num_recordings: int = 3, per_recording: int = 4) -> None:
    """Recordings (no audio read) and their non-overlapping supervisions, in stage 0's file names."""
    from lhotse import Recording, RecordingSet, SupervisionSegment, SupervisionSet
    from lhotse.audio import AudioSource

    from punct.features.compute import manifest_paths

    recordings, supervisions = [], []
    for r in range(num_recordings):
        rec = Recording(f"ted_{r}", [AudioSource("file", [0], "/dev/null")], 16000, 16000 * 60, 60.0)
        recordings.append(rec)
        supervisions += [
            SupervisionSegment(f"ted_{r}_{s}", rec.id, 10.0 * s + 1, 5.0, text="a b", speaker=f"spk{r}")
            for s in range(per_recording)
        ]
    rec_path, sup_path = manifest_paths(folder, "train", "mustc")
    RecordingSet.from_recordings(recordings).to_file(rec_path)
    SupervisionSet.from_segments(supervisions[::-1]).to_file(sup_path)  # not in recording order


@pytest.mark.parametrize("nj", [1, 2, 5, 13])
def test_a_job_reads_the_same_share_of_cuts_lazily(tmp_path, nj):
    from punct.features.compute import load_job_cuts, load_split_cuts
    from punct.utils.jobs import job_share

    write_stage0_manifests(tmp_path)
    whole = list(load_split_cuts(tmp_path, "train", "mustc"))
    for job in range(1, nj + 1):
        share = list(load_job_cuts(tmp_path, "train", "mustc", job, nj))
        assert [c.to_dict() for c in share] == [c.to_dict() for c in job_share(whole, job, nj)]
