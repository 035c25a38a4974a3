"""Layer-k (default 12 = tdnnf12) frame embeddings of every cut into kaldiio shards (stage 4).

One matrix per cut id, ``(num_frames, dim)`` with ``num_frames`` = the cut's feature frames
(``1 + (num_samples - 400) // 160``): row t is the layer's output at feature frame t, i.e. the
frame covering ``[t * 0.01, t * 0.01 + 0.025)`` s of the cut.  The first and last rows see
replicated edge frames as context (the TDNN pads each layer by repeating its edge frames), so
there are no missing rows at either end.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from pathlib import Path

from punct.am.infer import run_model
from punct.features.cmvn import SpeakerCmvn
from punct.features.compute import load_cut_features
from punct.io.shards import ShardWriter, is_shard_done
from punct.utils.progress import progress


def dump_shard(
    model, cuts: list, cmvn: SpeakerCmvn, prefix: Path, layer: int, compression: str, device=None, throttle: float = 0.0
) -> dict[str, float]:
    """Writes one shard; returns ``{"cuts", "audio_seconds", "cpu_seconds", "wall_seconds"}``."""
    kwargs = {} if device is None else {"device": device}
    audio, cpu0, wall0 = 0.0, time.process_time(), time.time()
    with ShardWriter(prefix, compression=compression) as writer:
        for cut in progress(cuts, desc=f"dump {Path(prefix).name}", mininterval=10):
            feats = load_cut_features(cut, cmvn)
            emb = run_model(model, feats, layer=layer, **kwargs)
            if emb.shape[0] != feats.shape[0]:
                raise RuntimeError(f"{cut.id}: {emb.shape[0]} embedding frames for {feats.shape[0]} feature frames")
            writer.write(cut.id, emb)
            audio += cut.duration
            if throttle:
                time.sleep(throttle)
    stats = {
        "cuts": len(cuts),
        "audio_seconds": audio,
        "cpu_seconds": time.process_time() - cpu0,
        "wall_seconds": time.time() - wall0,
    }
    logging.info(
        "%s: %d cuts, %.1f s audio, %.1f CPU s: %.1f audio s per CPU s",
        prefix,
        len(cuts),
        audio,
        stats["cpu_seconds"],
        audio / max(stats["cpu_seconds"], 1e-9),
    )
    return stats


__all__ = ["dump_shard", "is_shard_done"]


def benchmark_throughput(
    config_path: Path, cuts: Iterable, cmvn: SpeakerCmvn, num_tokens: int, layer: int, max_audio_seconds: float = 60.0
) -> dict[str, float]:
    """Audio seconds per CPU second of a layer-``layer`` dump with a randomly initialised model of
    ``config_path``'s size (e.g. the paper-size conf/am.yaml), on the first cuts up to ``max_audio_seconds``
    (``cuts`` is read no further: a lazy manifest is fine)."""
    import torch

    from punct.am.config import AmConfig
    from punct.am.model import build_model
    from punct.utils.config import load_config

    config = load_config(AmConfig, config_path)
    torch.manual_seed(0)
    model = build_model(config, num_tokens).eval()
    audio, cpu = 0.0, 0.0
    for cut in cuts:
        feats = load_cut_features(cut, cmvn)
        start = time.process_time()
        run_model(model, feats, layer=layer)
        cpu += time.process_time() - start
        audio += cut.duration
        if audio >= max_audio_seconds:
            break
    params = sum(p.numel() for p in model.parameters()) / 1e6
    logging.info(
        "throughput of %s (%.2f M params, layer %d, %d threads): %.1f audio s per CPU s (%.1f s audio)",
        config_path,
        params,
        layer,
        torch.get_num_threads(),
        audio / max(cpu, 1e-9),
        audio,
    )
    return {"audio_seconds": audio, "cpu_seconds": cpu, "params_m": params}
