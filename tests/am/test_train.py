"""AM training on the tiny espeak corpus: checkpoints, --resume, and DDP with two CPU processes (gloo)."""

import dataclasses
import logging
import os
import socket

import pytest
import torch
import torch.multiprocessing as mp

from punct.am.checkpoint import load_model
from punct.am.config import AmConfig
from punct.am.model import AmModelConfig
from punct.am.train import run_training
from punct.features.compute import feature_frames
from punct.training.loop import latest_checkpoint
from tests.helpers.espeak_corpus import cached_corpus, espeak_available

pytestmark = pytest.mark.skipif(not espeak_available(), reason="espeak-ng/sox not installed")

TINY = AmConfig(
    model=AmModelConfig(dim=24, bottleneck_dim=8, prefinal_small_dim=16, prefinal_big_dim=24),
    num_epochs=2,
    lr=2e-3,
    warmup_steps=1,
    max_duration=8.0,
    num_buckets=2,
    spec_augment=False,
    log_interval=1,
)

CTC = torch.nn.CTCLoss(blank=0, reduction="sum", zero_infinity=True)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_checkpoints_and_resume_reproduce_an_uninterrupted_run(tmp_path):
    torch.set_num_threads(1)
    fbank = cached_corpus() / "fbank"
    state3, straight = run_training(
        prefix="mustc",
        config=dataclasses.replace(TINY, num_epochs=3),
        fbank_dir=fbank,
        exp_dir=tmp_path / "straight",
        device_name="cpu",
        seed=3,
    )
    state2, _ = run_training(
        prefix="mustc", config=TINY, fbank_dir=fbank, exp_dir=tmp_path / "resumed", device_name="cpu", seed=3
    )
    exp = tmp_path / "resumed"
    assert {p.name for p in exp.glob("*.pt")} >= {"epoch-1.pt", "epoch-2.pt", "best-valid-loss.pt"}
    assert (exp / "tokens.txt").read_text().startswith("<blk> 0\n| 1\n")
    assert latest_checkpoint(exp).name == "epoch-2.pt" and state2.epoch == 2
    state, resumed = run_training(
        prefix="mustc",
        config=dataclasses.replace(TINY, num_epochs=3),
        fbank_dir=fbank,
        exp_dir=exp,
        device_name="cpu",
        seed=3,
        resume=True,
    )
    assert state.epoch == 3 and state.step == state3.step > state2.step
    for (name, a), b in zip(straight.state_dict().items(), resumed.state_dict().values()):
        assert torch.allclose(a.float(), b.float(), atol=1e-5), name
    model, tokens = load_model(exp / "best-valid-loss.pt")
    assert not model.training and len(tokens) == model.config.num_tokens


def _ddp_worker(rank: int, port: int, fbank: str, out: str) -> None:
    os.environ.update(
        MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE="2"
    )
    torch.set_num_threads(1)
    import torch.distributed as dist

    one_epoch = dataclasses.replace(TINY, num_epochs=1, max_duration=5.0)
    state, model = run_training(
        prefix="mustc", config=one_epoch, fbank_dir=fbank, exp_dir=f"{out}/exp", device_name="cpu", seed=5
    )
    torch.save(
        {"params": model.state_dict(), "steps": state.step, "backend": dist.get_backend()}, f"{out}/rank{rank}.pt"
    )
    # steps/train_am.sh's extra epochs (egs/parczech small trains the AM as two such processes): --resume to epoch 2
    dist.barrier()  # rank 0 has written epoch-1.pt
    epoch_one_written = os.stat(f"{out}/exp/epoch-1.pt").st_mtime_ns
    state, model = run_training(
        prefix="mustc",
        config=dataclasses.replace(one_epoch, num_epochs=2),
        fbank_dir=fbank,
        exp_dir=f"{out}/exp",
        device_name="cpu",
        seed=5,
        resume=True,
    )
    on = {"params": model.state_dict(), "steps": state.step, "epoch": state.epoch, "epoch_one": epoch_one_written}
    torch.save(on, f"{out}/rank{rank}_on.pt")
    dist.destroy_process_group()


def test_two_cpu_processes_under_gloo_agree_and_train_on(tmp_path):
    fbank = cached_corpus() / "fbank"
    mp.spawn(_ddp_worker, args=(_free_port(), str(fbank), str(tmp_path)), nprocs=2, join=True)
    r0 = torch.load(tmp_path / "rank0.pt", weights_only=False)
    r1 = torch.load(tmp_path / "rank1.pt", weights_only=False)
    assert r0["backend"] == "gloo"
    assert r0["steps"] == r1["steps"] >= 2
    for name, a in r0["params"].items():
        assert torch.equal(a, r1["params"][name]), name
    # the steps changed the model (rank 0 checkpoint vs a fresh init with the same seed)
    init = load_model(tmp_path / "exp" / "epoch-1.pt")[0].state_dict()
    assert all(torch.equal(init[k], v) for k, v in r0["params"].items())
    torch.manual_seed(5)
    from punct.am.model import TdnnAcousticModel

    fresh = TdnnAcousticModel(dataclasses.replace(TINY.model, num_tokens=init["output.weight"].shape[0])).state_dict()
    assert not torch.equal(fresh["output.weight"], init["output.weight"])
    # trained on from epoch-1.pt (not again from scratch: it was not written again), together, and still agreeing
    on0 = torch.load(tmp_path / "rank0_on.pt", weights_only=False)
    on1 = torch.load(tmp_path / "rank1_on.pt", weights_only=False)
    assert on0["epoch"] == on1["epoch"] == 2 and on0["steps"] == on1["steps"] == 2 * r0["steps"]
    assert all(torch.equal(a, on1["params"][name]) for name, a in on0["params"].items())
    assert not torch.equal(on0["params"]["output.weight"], r0["params"]["output.weight"])
    assert (tmp_path / "exp" / "epoch-1.pt").stat().st_mtime_ns == on0["epoch_one"] == on1["epoch_one"]


def test_ctc_loss_on_every_third_output_frame():
    """ctc_subsample k: the CTC loss of the outputs at frames 0, k, 2k, ... with ceil(T / k) frames each."""
    from punct.am.model import TdnnAcousticModel
    from punct.am.train import compute_loss

    torch.manual_seed(0)
    model = TdnnAcousticModel(
        AmModelConfig(dim=32, bottleneck_dim=8, prefinal_small_dim=16, prefinal_big_dim=32, num_tokens=6)
    ).eval()
    feats = torch.randn(2, 31, 40)
    batch = {
        "feats": feats,
        "feat_lens": torch.tensor([31, 25]),
        "targets": torch.tensor([1, 2, 3, 4, 5]),
        "target_lens": torch.tensor([3, 2]),
    }
    ctc = torch.nn.CTCLoss(blank=0, reduction="sum", zero_infinity=True)
    with torch.no_grad():
        loss, frames = compute_loss(model, batch, torch.device("cpu"), ctc, subsample=3)
        full, _ = compute_loss(model, batch, torch.device("cpu"), ctc)
        log_probs = model(feats).log_softmax(-1)
        expected = sum(
            ctc(
                log_probs[b, :length:3].unsqueeze(1),
                targets.unsqueeze(0),
                torch.tensor([len(range(0, length, 3))]),
                torch.tensor([len(targets)]),
            )
            for b, (length, targets) in enumerate([(31, torch.tensor([1, 2, 3])), (25, torch.tensor([4, 5]))])
        )
    assert frames == 56  # reported per input frame
    assert loss.item() == pytest.approx(expected.item(), rel=1e-5)
    assert loss.item() != pytest.approx(full.item(), rel=1e-3)


def test_subsampled_ctc_keeps_only_cuts_it_can_align():
    """A cut with enough input frames for its characters, but fewer loss frames after subsampling, would
    get an infinite CTC loss (zeroed silently by zero_infinity): usable_cuts drops and counts it."""
    from lhotse import CutSet

    from punct.am.dataset import usable_cuts
    from punct.am.tokens import TokenTable

    cuts = list(CutSet.from_file(cached_corpus() / "fbank" / "mustc_cuts_train.jsonl.gz"))[:4]
    tokens = TokenTable.from_words(w for c in cuts for w in c.supervisions[0].custom["words"])
    need = [len(tokens.encode_words(c.supervisions[0].custom["words"])) for c in cuts]
    # give cut 0 exactly as many frames as it needs at 100 frames/s: then only one frame in 3 reaches the loss
    repeats = sum(a == b for a, b in zip(*[tokens.encode_words(cuts[0].supervisions[0].custom["words"])] * 2))
    short = cuts[0].features
    cuts[0].features = dataclasses.replace(short, num_frames=need[0] + repeats + 2)
    assert {c.id for c in usable_cuts(CutSet.from_cuts(cuts), tokens, subsample=1)} >= {cuts[0].id}
    kept = usable_cuts(CutSet.from_cuts(cuts), tokens, subsample=3)
    assert cuts[0].id not in {c.id for c in kept}
    assert {c.id for c in kept} == {c.id for c in cuts[1:] if -(-feature_frames(c) // 3) >= need[cuts.index(c)]}


def test_extra_training_folders_are_merged_with_their_cmvn(tmp_path):
    from punct.am.dataset import load_split, load_train_splits

    fbank = cached_corpus() / "fbank"
    cuts, cmvn = load_split(fbank, "train", "mustc")
    with pytest.raises(ValueError, match="speakers .* also in another training folder"):
        load_train_splits([fbank, fbank], "train", "mustc")
    both, merged = load_train_splits([fbank], "train", "mustc")
    assert [c.id for c in both] == [c.id for c in cuts] and set(merged.stats) == set(cmvn.stats)


def _dev_loss(checkpoint, fbank, average_of=()) -> float:
    """The dev loss of a checkpoint (with the weights of the mean of ``average_of`` if given), computed here."""
    from punct.am.checkpoint import training_config
    from punct.am.train import compute_validation_loss

    model, tokens = load_model(checkpoint)
    if average_of:
        states = [torch.load(path, weights_only=True)["model"] for path in average_of]
        model.load_state_dict(
            {
                name: sum(s[name].double() for s in states).div(len(states)).to(value.dtype)
                if value.is_floating_point()
                else value
                for name, value in states[-1].items()
            }
        )
    config = training_config(checkpoint)
    return compute_validation_loss(
        model, _dev_loader(fbank, tokens, config), torch.device("cpu"), CTC, config.ctc_subsample
    )


def _dev_loader(fbank, tokens, config):
    from lhotse.dataset import SimpleCutSampler

    from punct.am.dataset import CtcDataset, load_split, usable_cuts

    cuts, cmvn = load_split(fbank, "dev", "mustc")
    sampler = SimpleCutSampler(
        usable_cuts(cuts, tokens, config.ctc_subsample).to_eager(), max_duration=config.max_duration
    )
    return torch.utils.data.DataLoader(CtcDataset(cmvn, tokens), sampler=sampler, batch_size=None)


def test_the_average_of_the_last_epochs_is_the_selected_model(tmp_path):
    from punct.training.checkpoint import average_state_dicts, load_checkpoint

    torch.set_num_threads(1)
    fbank = cached_corpus() / "fbank"
    exp = tmp_path / "am"
    config = dataclasses.replace(TINY, num_epochs=3, average_epochs=2)
    state, _ = run_training(prefix="mustc", config=config, fbank_dir=fbank, exp_dir=exp, device_name="cpu", seed=3)
    assert (state.best_epoch, state.best_averaged) == (3, 2)
    # the dev loss of epoch 1, which is not averaged, is not computed; epoch 2's is
    assert load_checkpoint(exp / "epoch-1.pt")["state"]["best_valid_loss"] == float("inf")
    assert load_checkpoint(exp / "epoch-2.pt")["state"]["best_epoch"] == 2
    best = load_checkpoint(exp / "best-valid-loss.pt")
    averaged = average_state_dicts([load_checkpoint(exp / f"epoch-{e}.pt")["model"] for e in (2, 3)])
    for name, value in averaged.items():
        assert torch.equal(best["model"][name], value), name
    # the recorded dev loss is the average's, computed here independently
    average_loss = _dev_loss(exp / "epoch-3.pt", fbank, average_of=[exp / "epoch-2.pt", exp / "epoch-3.pt"])
    assert state.best_valid_loss == pytest.approx(average_loss, rel=1e-4)
    assert average_loss != pytest.approx(_dev_loss(exp / "epoch-3.pt", fbank), rel=1e-4)

    (exp / "epoch-2.pt").unlink()
    with pytest.raises(FileNotFoundError, match="epoch-2.pt"):
        run_training(
            prefix="mustc", config=config, fbank_dir=fbank, exp_dir=exp, device_name="cpu", seed=3, resume=True
        )


def test_without_averaged_epochs_dev_loss_only_the_average_is_scored(tmp_path, caplog):
    from punct.am.train import first_dev_loss_epoch
    from punct.training.checkpoint import load_checkpoint

    torch.set_num_threads(1)
    fbank = cached_corpus() / "fbank"
    exp = tmp_path / "am"
    config = dataclasses.replace(TINY, num_epochs=3, average_epochs=2, averaged_epochs_dev_loss=False)
    assert first_dev_loss_epoch(config) == 4
    assert first_dev_loss_epoch(dataclasses.replace(config, averaged_epochs_dev_loss=True)) == 2
    assert first_dev_loss_epoch(dataclasses.replace(config, average_epochs=1)) == 1
    with caplog.at_level(logging.INFO):
        state, _ = run_training(prefix="mustc", config=config, fbank_dir=fbank, exp_dir=exp, device_name="cpu", seed=3)
    for epoch in (1, 2, 3):  # no single epoch was scored on dev
        assert load_checkpoint(exp / f"epoch-{epoch}.pt")["state"]["best_valid_loss"] == float("inf")
    assert (state.best_epoch, state.best_averaged) == (3, 2)
    average_loss = _dev_loss(exp / "epoch-3.pt", fbank, average_of=[exp / "epoch-2.pt", exp / "epoch-3.pt"])
    assert state.best_valid_loss == pytest.approx(average_loss, rel=1e-4)
    assert "dev loss only for the average of epochs 2-3" in caplog.text
    assert "best single epoch" not in caplog.text


def test_a_strided_model_needs_the_loss_on_its_frames():
    """model.frame_subsample k computes frames 0, k, 2k, ... only: the CTC loss must read those (ctc_subsample k)."""
    assert AmConfig(model=AmModelConfig(frame_subsample=3), ctc_subsample=3).model.frame_subsample == 3
    assert AmConfig(model=AmModelConfig(frame_subsample=1), ctc_subsample=3).ctc_subsample == 3  # every frame computed
    with pytest.raises(ValueError, match="ctc_subsample 3"):
        AmConfig(model=AmModelConfig(frame_subsample=3), ctc_subsample=1)
    with pytest.raises(ValueError, match=">= 1"):
        AmConfig(model=AmModelConfig(frame_subsample=0))
