"""CTC training of the TDNN acoustic model: one process, or DDP under torchrun.

``run_training`` is the whole stage; the pieces (``compute_loss``, ``train_one_epoch``,
``compute_validation_loss``) are small functions with explicit inputs.  Run state lives in
:class:`punct.am.checkpoint.AmTrainState`, never in the frozen config; what is saved and how a
later stage loads it is :mod:`punct.am.checkpoint`'s.

Distributed: under ``torchrun`` (``WORLD_SIZE`` > 1) each rank takes its share of every
epoch's batches from lhotse's sampler (``world_size``/``rank``), gradients are averaged by
DistributedDataParallel (NCCL on GPUs, gloo on CPU), and a step runs only while every rank
still has a batch, so ranks never wait on each other at an epoch's end.  Rank 0 writes
checkpoints; all ranks compute the same validation loss on the whole dev set.

Mixed precision (``amp``: bf16 or fp16, :class:`punct.training.loop.Amp`): the network's forward pass
in training runs under autocast, the CTC loss always in float32; the validation loss is float32 (model
selection does not depend on the precision of training), and so are the weights in every checkpoint.

Resume: ``epoch-N.pt`` after every epoch and, with ``save_every_n_steps``, ``epoch-E-batch-B.pt`` within one;
``--resume`` continues from the newest and trains the weights an uninterrupted run would
(:mod:`punct.training.resume`: the sampler's order is a function of (seed, epoch), SpecAugment's of (seed, epoch,
batch position), and every RNG state is restored).
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from lhotse import CutSet
from lhotse.dataset import DynamicBucketingSampler, SimpleCutSampler

from punct.am.checkpoint import BEST_CHECKPOINT, AmTrainState, save_checkpoint
from punct.am.config import AmConfig
from punct.am.dataset import CtcDataset, cut_words, load_split, load_train_splits, usable_cuts
from punct.am.model import TdnnAcousticModel, build_model
from punct.am.tokens import TokenTable
from punct.features.cmvn import SpeakerCmvn
from punct.training import checkpoint
from punct.training import resume as train_resume
from punct.training.checkpoint import load_checkpoint
from punct.training.curves import NO_CURVES, TrainingCurves, curves_for
from punct.training.loop import (
    NO_AMP,
    Amp,
    DistInfo,
    loader_options,
    seed_everything,
    setup_distributed,
    unwrap,
)
from punct.training.optim import fused_adam_flag
from punct.training.precision import PROBE_BATCHES, LossOf, check_amp, probe_loss_of, training_amp
from punct.utils.config import save_config
from punct.utils.progress import progress


def build_optimizer(model: torch.nn.Module, config: AmConfig) -> torch.optim.Optimizer:
    """Stage 2's Adam (fused where PyTorch has it), also saved into the epoch-0 checkpoint of ``punct.am.init_from``."""
    params = list(model.parameters())
    return torch.optim.Adam(params, lr=config.lr, weight_decay=config.weight_decay, fused=fused_adam_flag(params))


def compute_loss(
    model: torch.nn.Module,
    batch: dict,
    device: torch.device,
    ctc: torch.nn.CTCLoss,
    subsample: int = 1,
    amp: Amp = NO_AMP,
) -> tuple[torch.Tensor, int]:
    """Summed CTC loss of a batch over every ``subsample``-th output frame, and the batch's input frame
    count (the loss is reported per input frame).  The network runs under ``amp``'s autocast; the
    log-softmax and CTC run in float32 (CTC sums products of many small probabilities)."""
    feats = batch["feats"].to(device, non_blocking=True)
    with amp.autocast():
        logits = model(feats, subsample=subsample)  # (N, ceil(T / subsample), V): forward(feats)[:, ::subsample]
    log_probs = logits.float().log_softmax(dim=-1).transpose(0, 1)  # (T', N, V)
    feat_lens = batch["feat_lens"].to(device)
    output_lens = torch.div(feat_lens + subsample - 1, subsample, rounding_mode="floor")
    loss = ctc(log_probs, batch["targets"].to(device), output_lens, batch["target_lens"].to(device))
    return loss, int(feat_lens.sum())


def _synchronised(batches, dist_info: DistInfo, device: torch.device) -> Iterator[dict]:
    """Yields batches while every rank has one."""
    iterator = iter(batches)
    while True:
        batch = next(iterator, None)
        if dist_info.world_size > 1:
            flag = torch.tensor([0 if batch is None else 1], device=device)
            dist.all_reduce(flag, op=dist.ReduceOp.MIN)
            if int(flag.item()) == 0:
                return
        elif batch is None:
            return
        yield batch


def learning_rate(config: AmConfig, state: AmTrainState, epoch: int) -> float:
    warm = min(1.0, (state.step + 1) / max(1, config.warmup_steps))
    return config.lr * warm * config.lr_decay ** max(0, epoch - 1)


def train_one_epoch(
    *,
    model,
    optimizer,
    loader,
    config: AmConfig,
    state: AmTrainState,
    epoch: int,
    device: torch.device,
    dist_info: DistInfo,
    ctc: torch.nn.CTCLoss,
    amp: Amp = NO_AMP,
    curves: TrainingCurves = NO_CURVES,
    save_mid_epoch=None,
) -> float:
    """One pass over this rank's batches; returns the rank's loss per frame (the logged steps' also to ``curves``).

    A resumed epoch (``state.batches_done`` > 0) gets its remaining batches from ``loader`` (the sampler skipped the
    others) and its sums so far from ``state.epoch_sums``; ``save_mid_epoch()`` (every rank calls it) writes a
    mid-epoch checkpoint every ``config.save_every_n_steps`` steps."""
    model.train()
    total_loss = float(state.epoch_sums.get("loss", 0.0))
    total_frames = int(state.epoch_sums.get("frames", 0))
    bar = progress(
        _synchronised(loader, dist_info, device), enabled=dist_info.is_main, desc=f"epoch {epoch}", mininterval=10
    )
    for batch_idx, batch in enumerate(bar, start=state.batches_done):
        lr = learning_rate(config, state, epoch)
        for group in optimizer.param_groups:
            group["lr"] = lr
        loss, frames = compute_loss(model, batch, device, ctc, config.ctc_subsample, amp)
        optimizer.zero_grad()
        amp.step(loss / frames, optimizer, model.parameters(), config.grad_clip)
        state.step += 1
        total_loss += float(loss.detach())
        total_frames += frames
        if batch_idx % config.log_interval == 0:
            logging.info(
                "epoch %d batch %d step %d lr %.2e loss/frame %.4f (epoch avg %.4f)",
                epoch,
                batch_idx,
                state.step,
                lr,
                loss.item() / frames,
                total_loss / max(1, total_frames),
            )
            curves.add_scalars({"train/loss_per_frame": loss.item() / frames, "train/lr": lr}, state.step)
        if save_mid_epoch is not None and train_resume.save_every(config.save_every_n_steps, state.step):
            state.batches_done, state.epoch_sums = batch_idx + 1, {"loss": total_loss, "frames": total_frames}
            save_mid_epoch()
    state.batches_done, state.epoch_sums = 0, {}
    return total_loss / max(1, total_frames)


@torch.no_grad()
def compute_validation_loss(model, loader, device: torch.device, ctc: torch.nn.CTCLoss, subsample: int = 1) -> float:
    model.eval()
    total_loss, total_frames = 0.0, 0
    for batch in loader:
        loss, frames = compute_loss(model, batch, device, ctc, subsample)
        total_loss += float(loss)
        total_frames += frames
    return total_loss / max(1, total_frames)


def make_loaders(
    *,
    train_cuts: CutSet,
    train_cmvn: SpeakerCmvn,
    dev_cuts: CutSet,
    dev_cmvn: SpeakerCmvn,
    tokens: TokenTable,
    config: AmConfig,
    seed: int,
    dist_info: DistInfo,
    device: torch.device = torch.device("cpu"),
):
    spec = None
    if config.spec_augment:
        spec = dict(
            num_time_masks=config.num_time_masks,
            max_time=config.max_time_mask,
            num_freq_masks=config.num_freq_masks,
            max_freq=config.max_freq_mask,
        )
    train_sampler = DynamicBucketingSampler(
        train_cuts,
        max_duration=config.max_duration,
        num_buckets=max(1, min(config.num_buckets, len(train_cuts) // 2)),
        shuffle=True,
        seed=seed,
        world_size=dist_info.world_size,
        rank=dist_info.rank,
        drop_last=dist_info.world_size > 1,
    )
    options = loader_options(config.num_workers, device)
    # items (cuts, epoch, position): SpecAugment draws per batch position, and a resumed epoch skips the batches done
    # in the sampler; the loader's own generator keeps its worker seed out of torch's global RNG (dropout's)
    positioned = train_resume.SkipBatches(train_sampler)
    train_loader = torch.utils.data.DataLoader(
        CtcDataset(train_cmvn, tokens, spec, seed=seed + dist_info.rank),
        sampler=positioned,
        batch_size=None,
        generator=train_resume.loader_generator(),
        **options,
    )
    dev_sampler = SimpleCutSampler(dev_cuts, max_duration=config.max_duration, shuffle=False, world_size=1, rank=0)
    dev_loader = torch.utils.data.DataLoader(
        CtcDataset(dev_cmvn, tokens), sampler=dev_sampler, batch_size=None, **options
    )
    return positioned, train_loader, dev_loader


def resume_latest(
    exp_dir: Path, model: TdnnAcousticModel, optimizer: torch.optim.Optimizer, tokens: TokenTable, device: torch.device
) -> tuple[AmTrainState, dict[str, Any] | None]:
    """Model, optimizer and state of the newest checkpoint (:func:`punct.training.resume.newest_checkpoint`; a new
    state if none), whose token table must be ``tokens``; also the checkpoint (its RNG and GradScaler states are
    restored later, where the training starts)."""
    checkpoint = train_resume.newest_checkpoint(exp_dir)
    if checkpoint is None:
        logging.info("--resume: no epoch-N.pt in %s; starting from scratch", exp_dir)
        return AmTrainState(), None
    data = load_checkpoint(checkpoint, device)
    if data["tokens"] != tokens.symbols:
        raise ValueError(f"{checkpoint}: token table differs from {exp_dir}/tokens.txt")
    model.load_state_dict(data["model"])
    optimizer.load_state_dict(data["optimizer"])
    state = AmTrainState(**data["state"])
    logging.info(
        "resumed from %s (epoch %d done, %d batches of the next, step %d)",
        checkpoint,
        state.epoch,
        state.batches_done,
        state.step,
    )
    return state, data


def run_training(
    *,
    config: AmConfig,
    fbank_dir: Path,
    exp_dir: Path,
    prefix: str,
    device_name: str = "auto",
    seed: int = 42,
    resume: bool = False,
    train_split: str = "train",
    dev_split: str = "dev",
    extra_train_dirs: Sequence[Path] = (),
    amp: str = "none",
) -> tuple[AmTrainState, TdnnAcousticModel]:
    """Stage 2: trains, writes ``tokens.txt``, ``config.yaml``, ``epoch-N.pt``, ``best-valid-loss.pt``.

    ``extra_train_dirs``: more stage-1 folders whose ``train_split`` cuts are trained on too (e.g. the mini
    corpus' AM-only talks); dev stays the main folder's.  ``amp``: none, bf16 or fp16 (CUDA only).

    Returns the final state and this rank's model (after the last epoch, unwrapped from DDP).
    """
    dist_info, device = setup_distributed(device_name)
    check_amp(amp, device)
    seed_everything(seed, device.type)
    exp_dir = Path(exp_dir)
    tokens, (train_cuts, train_cmvn), (dev_cuts, dev_cmvn) = _prepare_data(
        config=config,
        fbank_dirs=[fbank_dir, *extra_train_dirs],
        exp_dir=exp_dir,
        prefix=prefix,
        train_split=train_split,
        dev_split=dev_split,
        dist_info=dist_info,
        device=device,
    )
    model, optimizer, state, resumed = _model_and_optimizer(config, tokens, exp_dir, resume, dist_info, device)
    probe_loss = _probe_loss(config, train_cuts, train_cmvn, tokens, device)
    precision = training_amp(amp, device, unwrap(model), probe_loss, state=state)
    dev_loader, ctc = _train_epochs(
        config=config,
        exp_dir=exp_dir,
        tokens=tokens,
        train=(train_cuts, train_cmvn),
        dev=(dev_cuts, dev_cmvn),
        model=model,
        optimizer=optimizer,
        state=state,
        seed=seed,
        dist_info=dist_info,
        device=device,
        precision=precision,
        resumed=resumed,
    )
    if dist_info.is_main and config.average_epochs > 1:
        select_average(exp_dir, state, config, tokens, dev_loader, device, ctc)
    if dist_info.world_size > 1:
        dist.barrier()
    return state, unwrap(model)


def _probe_loss(config: AmConfig, cuts: CutSet, cmvn: SpeakerCmvn, tokens: TokenTable, device: torch.device) -> LossOf:
    """The CTC loss of the training cuts' first batches of ``max_duration`` seconds, each of another shape as in
    training (``--amp fastest`` times their steps)."""
    ctc = torch.nn.CTCLoss(blank=0, reduction="sum", zero_infinity=True)

    def first_batches() -> list[dict]:
        sampler = SimpleCutSampler(cuts, max_duration=config.max_duration)
        return [CtcDataset(cmvn, tokens)[batch] for batch in itertools.islice(sampler, PROBE_BATCHES)]

    return probe_loss_of(
        first_batches, lambda model, batch, amp: compute_loss(model, batch, device, ctc, config.ctc_subsample, amp)[0]
    )


def _train_epochs(
    *,
    config: AmConfig,
    exp_dir: Path,
    tokens: TokenTable,
    train: tuple,
    dev: tuple,
    model,
    optimizer,
    state: AmTrainState,
    seed: int,
    dist_info: DistInfo,
    device: torch.device,
    precision: Amp,
    resumed: dict[str, Any] | None = None,
):
    """The epochs after ``state.epoch`` (the first from batch ``state.batches_done`` on), each validated and saved;
    returns the dev loader and the CTC loss (the checkpoint averaging scores with them).  ``resumed``: the
    checkpoint the state comes from, whose GradScaler and RNG states are restored before the first step."""
    train_sampler, train_loader, dev_loader = make_loaders(
        train_cuts=train[0],
        train_cmvn=train[1],
        dev_cuts=dev[0],
        dev_cmvn=dev[1],
        tokens=tokens,
        config=config,
        seed=seed,
        dist_info=dist_info,
        device=device,
    )
    ctc = torch.nn.CTCLoss(blank=0, reduction="sum", zero_infinity=True)
    curves = curves_for(exp_dir, dist_info.is_main, state.step)
    train_resume.start_resumed(resumed, precision, dist_info)
    save_mid_epoch = _mid_epoch_saver(exp_dir, model, optimizer, state, config, tokens, precision, dist_info)
    for epoch in range(state.epoch + 1, config.num_epochs + 1):
        train_sampler.set_epoch(epoch)
        train_sampler.start = state.batches_done  # a resumed epoch: the batches done are skipped, not read
        train_loss = train_one_epoch(
            model=model,
            optimizer=optimizer,
            loader=train_loader,
            config=config,
            state=state,
            epoch=epoch,
            device=device,
            dist_info=dist_info,
            ctc=ctc,
            amp=precision,
            curves=curves,
            save_mid_epoch=save_mid_epoch,
        )
        state.epoch = epoch
        improved = _validate(model, dev_loader, device, ctc, config, state, train_loss)
        extra = train_resume.resume_extra(precision, dist_info)
        if dist_info.is_main:
            _save_epoch(exp_dir, epoch, improved, model, optimizer, state, config, tokens, extra)
            curves.end_epoch(state.history, state.step)
    curves.close()
    return dev_loader, ctc


def _mid_epoch_saver(exp_dir: Path, model, optimizer, state, config, tokens, precision: Amp, dist_info: DistInfo):
    """:func:`punct.training.resume.mid_epoch_saver` of the AM's checkpoints."""

    def write(path: Path, extra: dict[str, Any]) -> None:
        save_checkpoint(path, model=model, optimizer=optimizer, state=state, config=config, tokens=tokens, **extra)

    return train_resume.mid_epoch_saver(exp_dir, state, precision, dist_info, write)


def _model_and_optimizer(
    config: AmConfig, tokens: TokenTable, exp_dir: Path, resume: bool, dist_info: DistInfo, device: torch.device
):
    """The model (wrapped in DDP on several ranks), its Adam optimizer and the training state, resumed from the
    newest checkpoint with ``resume``: ``model, optimizer, state, resumed`` (that checkpoint, or None)."""
    model = build_model(config, len(tokens)).to(device)
    logging.info(
        "model: %.2f M parameters, context %s frames", sum(p.numel() for p in model.parameters()) / 1e6, model.context()
    )
    optimizer = build_optimizer(model, config)
    state, resumed = resume_latest(exp_dir, model, optimizer, tokens, device) if resume else (AmTrainState(), None)
    if dist_info.world_size > 1:
        model = torch.nn.parallel.DistributedDataParallel(
            model, device_ids=[device.index] if device.type == "cuda" else None
        )
    return model, optimizer, state, resumed


def _save_epoch(
    exp_dir: Path,
    epoch: int,
    improved: bool,
    model,
    optimizer,
    state: AmTrainState,
    config: AmConfig,
    tokens: TokenTable,
    extra: dict[str, Any] | None = None,
) -> None:
    """``epoch-N.pt`` (with ``extra``: :func:`punct.training.resume.resume_extra`) and the mid-epoch checkpoints it
    replaces removed, and ``best-valid-loss.pt`` (without the optimizer) when the dev loss improved."""
    save_checkpoint(
        exp_dir / f"epoch-{epoch}.pt",
        model=model,
        optimizer=optimizer,
        state=state,
        config=config,
        tokens=tokens,
        **(extra or {}),
    )
    train_resume.remove_mid_epoch_checkpoints(exp_dir)
    if improved:
        save_checkpoint(
            exp_dir / BEST_CHECKPOINT, model=model, optimizer=None, state=state, config=config, tokens=tokens
        )


def _prepare_data(
    *,
    config: AmConfig,
    fbank_dirs: Sequence[Path],
    exp_dir: Path,
    prefix: str,
    train_split: str,
    dev_split: str,
    dist_info: DistInfo,
    device: torch.device,
):
    """The token table of the training cuts (written with the config by the main rank), and the usable
    training and dev cuts, each with its CMVN: ``tokens, (train_cuts, train_cmvn), (dev_cuts, dev_cmvn)``."""
    train_cuts, train_cmvn = load_train_splits(fbank_dirs, train_split, prefix)
    dev_cuts, dev_cmvn = load_split(fbank_dirs[0], dev_split, prefix)
    tokens = TokenTable.from_words(cut_words(c) for c in train_cuts)
    if dist_info.is_main:
        exp_dir.mkdir(parents=True, exist_ok=True)
        tokens.save(exp_dir / "tokens.txt")
        save_config(config, exp_dir / "config.yaml")
    logging.info("rank %d/%d on %s; %d tokens", dist_info.rank, dist_info.world_size, device, len(tokens))
    train_cuts = usable_cuts(train_cuts, tokens, config.ctc_subsample).to_eager()
    dev_cuts = usable_cuts(dev_cuts, tokens, config.ctc_subsample).to_eager()
    logging.info(
        "train %d cuts (%.1f h), dev %d cuts",
        len(train_cuts),
        sum(c.duration for c in train_cuts) / 3600,
        len(dev_cuts),
    )
    return tokens, (train_cuts, train_cmvn), (dev_cuts, dev_cmvn)


def _validate(
    model, dev_loader, device: torch.device, ctc, config: AmConfig, state: AmTrainState, train_loss: float
) -> bool:
    """Logs the epoch's losses into ``state.history``, with its dev loss where computed (:func:`first_dev_loss_epoch`);
    whether that is the best so far (``state`` then records it)."""
    epoch = state.epoch
    state.history.append({"epoch": epoch, "step": state.step, "train_loss": train_loss})
    if epoch < first_dev_loss_epoch(config):
        logging.info("epoch %d: train loss/frame %.4f (%s)", epoch, train_loss, dev_loss_scope(config))
        return False
    valid_loss = compute_validation_loss(model, dev_loader, device, ctc, config.ctc_subsample)
    state.history[-1]["dev_loss"] = valid_loss
    improved = valid_loss < state.best_valid_loss
    if improved:
        state.best_valid_loss, state.best_epoch = valid_loss, epoch
    logging.info(
        "epoch %d: train loss/frame %.4f, dev loss/frame %.4f%s",
        epoch,
        train_loss,
        valid_loss,
        " (best)" if improved else "",
    )
    return improved


def first_dev_loss_epoch(config: AmConfig) -> int:
    """The first epoch whose dev loss is computed (``num_epochs + 1``: none).  With ``average_epochs`` > 1 the
    average replaces every single epoch (:func:`select_average`), so only the averaged epochs' dev losses are
    reported, or none without ``averaged_epochs_dev_loss`` (the others' would cost ~12 % of the mini AM's
    training time and decide nothing); else every epoch's, which selects the best."""
    if config.average_epochs <= 1:
        return 1
    if not config.averaged_epochs_dev_loss:
        return config.num_epochs + 1
    return max(1, config.num_epochs - config.average_epochs + 1)


def dev_loss_scope(config: AmConfig) -> str:
    """Which dev losses stage 2 computes, for the log lines of the epochs without one."""
    first_averaged = max(1, config.num_epochs - config.average_epochs + 1)
    if first_dev_loss_epoch(config) > config.num_epochs:
        return f"dev loss only for the average of epochs {first_averaged}-{config.num_epochs}"
    return f"dev loss only for the averaged epochs {first_averaged}-{config.num_epochs}"


def select_average(
    exp_dir: Path,
    state: AmTrainState,
    config: AmConfig,
    tokens: TokenTable,
    dev_loader,
    device: torch.device,
    ctc: torch.nn.CTCLoss,
) -> None:
    """Averages the last ``config.average_epochs`` epochs' weights into ``best-valid-loss.pt`` (``state`` records
    it and its dev loss).  The average replaces the best single epoch even when that epoch's dev loss is lower:
    on the mini corpus the dev loss of single epochs rises after epoch ~12 while greedy WER keeps falling, and
    the average had the lower WER in every run (conf/am_mini.yaml)."""
    first = max(1, state.epoch - config.average_epochs + 1)
    paths = [exp_dir / f"epoch-{epoch}.pt" for epoch in range(first, state.epoch + 1)]
    missing = [str(path) for path in paths if not path.is_file()]
    if missing:
        raise FileNotFoundError(f"average_epochs {config.average_epochs}: missing {', '.join(missing)}")
    model = build_model(config, len(tokens)).to(device)
    model.load_state_dict(checkpoint.average_state_dicts([load_checkpoint(path, device)["model"] for path in paths]))
    valid_loss = compute_validation_loss(model, dev_loader, device, ctc, config.ctc_subsample)
    single = f" (best single epoch {state.best_epoch}: {state.best_valid_loss:.4f})" if state.best_epoch > 0 else ""
    logging.info("selected: the average of epochs %d-%d, dev loss/frame %.4f%s", first, state.epoch, valid_loss, single)
    state.best_valid_loss, state.best_epoch, state.best_averaged = valid_loss, state.epoch, len(paths)
    save_checkpoint(exp_dir / BEST_CHECKPOINT, model=model, optimizer=None, state=state, config=config, tokens=tokens)
