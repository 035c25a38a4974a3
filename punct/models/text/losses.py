"""Word-level losses for the text branch: a small registry ``name -> loss``.

Every loss is called on the **labelled words** of a batch only (padding and ignored words
already removed) as ``loss(logits (M, C), labels (M,), features (M, H))`` and returns a
scalar; ``features`` are the encoder's final hidden states of those words (used by SCL).

* ``ce``: cross-entropy, mean over words.
* ``focal``: focal loss ``-(1 - p_t)^gamma log p_t`` (gamma 2), mean over words.
* ``scl``: ``(1 - lambda) CE + lambda SCL`` (Huang et al. 2021, eq. 3), with the token-level
  supervised contrastive loss of eq. 5 on L2-normalised features:

      SCL = sum_{i in I} -1/|P(i)| sum_{p in P(i)} log( exp(z_i.z_p / tau) / sum_{k in A(i)} exp(z_i.z_k / tau) )

  where A(i) = every other word of the batch and P(i) = the words of A(i) with i's label.
  Section 4.4 gives the temperature as "0.6 / 0.07".  Two readings (``scl_form``):

  * ``supcon`` (default, the authors' code, which uses Khosla et al.'s SupConLoss): tau = 0.6
    divides the similarities, and the loss is scaled by temperature / base_temperature = 0.6 / 0.07.
  * ``literal``: tau = 0.6 / 0.07 = 8.57 inside the exponent, no scale.  The similarities then
    move the softmax by at most 2 / 8.57, so the term is nearly constant and its gradient is
    about a hundred times weaker than the supcon form's.

  An anchor without a positive (the only word of its class in the batch: at most one per class)
  has P(i) empty, and eq. 5 leaves its term undefined.  We follow the authors' released code
  (github.com/hqsiswiliam/punctuation-restoration-scl @5d2c87d, ``loss/scl_loss.py``): such an anchor
  stays among the anchors, and its term is a constant.  Their guard divides
  ``(sum over P(i) + 1e-20) / (|P(i)| + 1e-20)``, which is 1 for an empty P(i), so the anchor's
  mean log-probability is 1 and its term is ``-1`` (``NO_POSITIVE_TERM``; times temperature /
  base_temperature in the supcon form).  With n0 such anchors among M words:

  * value: ``mean = (sum of the M - n0 anchors' terms - n0) / M`` (``sum``: the same without / M);
  * gradient: the constant adds none, but the M - n0 other terms are divided by M, so the
    gradient is (M - n0) / M times that of a mean over the anchors with a positive only (n0 <= C,
    the number of classes: 4 against hundreds of words per batch).  The lone word still enters the
    other anchors' denominators as a negative, and so still gets a gradient.

  The guard's 1e-20 in the terms of anchors with positives changes them by about 1e-20 and is left
  out.  ``reduction="sum"`` is eq. 5 as printed; ``"mean"`` (default) divides by the number of
  anchors (every word, as the authors' code), so lambda does not depend on the batch size in words.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

LOSSES: dict[str, Callable[..., nn.Module]] = {}


def register_loss(name: str):
    def wrap(cls):
        if name in LOSSES:
            raise ValueError(f"loss {name!r} registered twice")
        LOSSES[name] = cls
        cls.name = name
        return cls

    return wrap


@dataclass(frozen=True)
class LossConfig:
    """Loss choice and its parameters (paper values as defaults)."""

    name: str = "ce"
    scl_lambda: float = 0.1
    scl_temperature: float = 0.6
    scl_base_temperature: float = 0.07
    scl_reduction: str = "mean"
    scl_form: str = "supcon"  # supcon (the authors' code) or literal (tau = temperature / base_temperature)
    focal_gamma: float = 2.0


SCL_FORMS = ("supcon", "literal")


def build_loss(config: LossConfig) -> nn.Module:
    if config.name not in LOSSES:
        raise ValueError(f"unknown loss {config.name!r}; choose one of {sorted(LOSSES)}")
    return LOSSES[config.name].from_config(config)


@register_loss("ce")
class CrossEntropyLoss(nn.Module):
    @classmethod
    def from_config(cls, config: LossConfig) -> CrossEntropyLoss:
        return cls()

    def forward(self, logits: torch.Tensor, labels: torch.Tensor, features: torch.Tensor | None = None) -> torch.Tensor:
        return F.cross_entropy(logits, labels)


@register_loss("focal")
class FocalLoss(nn.Module):
    def __init__(self, gamma: float = 2.0) -> None:
        super().__init__()
        if gamma < 0:
            raise ValueError(f"focal gamma must be >= 0, got {gamma}")
        self.gamma = gamma

    @classmethod
    def from_config(cls, config: LossConfig) -> FocalLoss:
        return cls(config.focal_gamma)

    def forward(self, logits: torch.Tensor, labels: torch.Tensor, features: torch.Tensor | None = None) -> torch.Tensor:
        log_p = F.log_softmax(logits, dim=-1).gather(1, labels.unsqueeze(1)).squeeze(1)  # (M,)
        p = log_p.exp()
        return (-((1.0 - p) ** self.gamma) * log_p).mean()


NO_POSITIVE_TERM = -1.0  # the term of an anchor without a positive (module docstring)


def supervised_contrastive_loss(
    features: torch.Tensor, labels: torch.Tensor, tau: float, reduction: str = "mean"
) -> torch.Tensor:
    """Eq. 5 of Huang et al. 2021 on (M, H) features and (M,) labels (vectorised).

    Every word is an anchor; one without a positive adds ``NO_POSITIVE_TERM``, a constant with no
    gradient (the authors' code; module docstring).  An empty batch gives 0, attached to the graph.
    """
    if reduction not in ("mean", "sum"):
        raise ValueError(f"reduction must be 'mean' or 'sum', got {reduction!r}")
    m = features.size(0)
    if m == 0:
        return features.sum() * 0.0
    z = F.normalize(features.float(), p=2, dim=-1)
    sim = z @ z.t() / tau  # (M, M)
    self_mask = torch.eye(m, dtype=torch.bool, device=z.device)
    # log softmax over A(i) = all k != i
    sim = sim.masked_fill(self_mask, float("-inf"))
    log_prob = sim - torch.logsumexp(sim, dim=1, keepdim=True)
    positives = (labels.unsqueeze(0) == labels.unsqueeze(1)) & ~self_mask  # (M, M)
    num_pos = positives.sum(dim=1)
    pos_log_prob = log_prob.masked_fill(~positives, 0.0).sum(dim=1)  # -inf only on the diagonal, masked
    per_anchor = torch.where(
        num_pos > 0, -pos_log_prob / num_pos.clamp(min=1), torch.full_like(pos_log_prob, NO_POSITIVE_TERM)
    )
    return per_anchor.sum() if reduction == "sum" else per_anchor.mean()


@register_loss("scl")
class CrossEntropySCLLoss(nn.Module):
    """``(1 - lambda) CE + lambda SCL``; SCL in the ``supcon`` or ``literal`` form (module docstring)."""

    def __init__(
        self,
        scl_lambda: float = 0.1,
        temperature: float = 0.6,
        base_temperature: float = 0.07,
        reduction: str = "mean",
        form: str = "supcon",
    ) -> None:
        super().__init__()
        if not 0.0 <= scl_lambda <= 1.0:
            raise ValueError(f"scl lambda must be in [0, 1], got {scl_lambda}")
        if temperature <= 0 or base_temperature <= 0:
            raise ValueError("scl temperatures must be > 0")
        if form not in SCL_FORMS:
            raise ValueError(f"scl form must be one of {SCL_FORMS}, got {form!r}")
        self.scl_lambda = scl_lambda
        if form == "supcon":
            self.tau, self.scale = temperature, temperature / base_temperature
        else:
            self.tau, self.scale = temperature / base_temperature, 1.0
        self.reduction = reduction

    @classmethod
    def from_config(cls, config: LossConfig) -> CrossEntropySCLLoss:
        return cls(
            config.scl_lambda,
            config.scl_temperature,
            config.scl_base_temperature,
            config.scl_reduction,
            config.scl_form,
        )

    def forward(self, logits: torch.Tensor, labels: torch.Tensor, features: torch.Tensor | None = None) -> torch.Tensor:
        if features is None:
            raise ValueError("the scl loss needs the word features")
        ce = F.cross_entropy(logits, labels)
        scl = self.scale * supervised_contrastive_loss(features, labels, self.tau, self.reduction)
        return (1.0 - self.scl_lambda) * ce + self.scl_lambda * scl
