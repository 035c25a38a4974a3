"""The pause-only classifier: a grid of small scikit-learn models fit on train, one chosen on dev.

Candidates (:class:`PauseConfig`; every combination is one candidate, in this order):

* ``logistic``: standardised features, multinomial logistic regression with an L2 penalty of inverse strength
  ``C`` (each of ``logistic_c``);
* ``trees``: gradient-boosted trees (``HistGradientBoostingClassifier``, no early stopping: every candidate sees
  all of train) of each depth in ``tree_depths``;

each without class weights (``none``) and with weights inversely proportional to the class frequencies of train
(``balanced``).  Each candidate is fit on the train words and scored on the dev words by overall F1 (the
micro-average over the marks, :func:`punct.scoring.punct_scores.score`, as egs/mustc scores; or macro F1, the
headline of egs/parczech); the highest is kept (ties: the earlier candidate, i.e. the more regularised or
shallower one).  Test is never looked at here.
Every random choice takes the seed.
"""

from __future__ import annotations

import contextlib
import logging
import pickle
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from punct.scoring.punct_scores import score
from punct.utils.atomic import atomic_path
from punct.utils.pathlike import Pathlike

KINDS: tuple[str, ...] = ("logistic", "trees")
CLASS_WEIGHTS: tuple[str, ...] = ("none", "balanced")
METRICS: tuple[str, ...] = ("overall", "macro")  # dev F1 the candidates are compared on: micro or macro over the marks


@dataclass(frozen=True)
class PauseConfig:
    """The candidates of the dev choice (a YAML file by --config of the entry points, or their flags)."""

    kinds: tuple[str, ...] = KINDS
    logistic_c: tuple[float, ...] = (0.01, 0.1, 1.0, 10.0)  # inverse L2 strengths, strongest penalty first
    logistic_max_iter: int = 1000
    tree_depths: tuple[int, ...] = (2, 3, 5)  # max_depth of the boosted trees, shallowest first
    tree_iterations: int = 100  # boosting iterations
    tree_learning_rate: float = 0.1
    class_weights: tuple[str, ...] = CLASS_WEIGHTS

    def __post_init__(self) -> None:
        for name, values, known in (("kinds", self.kinds, KINDS), ("class_weights", self.class_weights, CLASS_WEIGHTS)):
            unknown = sorted(set(values) - set(known))
            if unknown or not values:
                raise ValueError(f"{name}: expected some of {list(known)}, got {list(values)}")


@dataclass(frozen=True)
class PauseCandidate:
    """One classifier of the grid."""

    kind: str  # logistic or trees
    class_weight: str  # none or balanced
    c: float | None = None  # logistic: inverse L2 strength
    max_depth: int | None = None  # trees

    def describe(self) -> str:
        setting = f"C={self.c:g}" if self.kind == "logistic" else f"depth {self.max_depth}"
        return f"{self.kind} ({setting}, class weights {self.class_weight})"

    def estimator(self, config: PauseConfig, seed: int) -> Any:
        """The unfitted scikit-learn estimator."""
        from sklearn.ensemble import HistGradientBoostingClassifier
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        weight = "balanced" if self.class_weight == "balanced" else None
        if self.kind == "logistic":
            return make_pipeline(
                StandardScaler(),
                LogisticRegression(C=self.c, class_weight=weight, max_iter=config.logistic_max_iter, random_state=seed),
            )
        return HistGradientBoostingClassifier(
            max_depth=self.max_depth,
            max_iter=config.tree_iterations,
            learning_rate=config.tree_learning_rate,
            class_weight=weight,
            early_stopping=False,
            random_state=seed,
        )


@contextlib.contextmanager
def classifier_threads(num_threads: int) -> Iterator[None]:
    """At most ``num_threads`` OpenMP and BLAS threads inside the block (0: the libraries' defaults).  The boosted
    trees run about ten times slower with a thread per core on a machine whose cores are busy."""
    if num_threads <= 0:
        yield
        return
    from threadpoolctl import threadpool_limits  # installed with scikit-learn

    with threadpool_limits(limits=num_threads):
        yield


def candidates(config: PauseConfig) -> list[PauseCandidate]:
    """The grid in the order of the dev choice's tie-break."""
    grid = []
    for kind in config.kinds:
        for weight in config.class_weights:
            if kind == "logistic":
                grid += [PauseCandidate(kind, weight, c=c) for c in config.logistic_c]
            else:
                grid += [PauseCandidate(kind, weight, max_depth=d) for d in config.tree_depths]
    return grid


@dataclass
class PauseClassifier:
    """A fitted candidate and the label set whose classes its posteriors' columns are."""

    estimator: Any
    candidate: PauseCandidate
    classes: tuple[str, ...]

    def posteriors(self, features: np.ndarray) -> np.ndarray:
        """(N, len(classes)) float32 probabilities; a class absent from train has probability 0."""
        out = np.zeros((len(features), len(self.classes)), dtype=np.float32)
        if len(features):
            out[:, self.estimator.classes_] = self.estimator.predict_proba(features)
        return out

    def predict(self, features: np.ndarray) -> np.ndarray:
        return self.posteriors(features).argmax(axis=1)

    def save(self, path: Pathlike) -> None:
        """Pickles the model (written atomically); :meth:`load` reads it back."""
        state = {"estimator": self.estimator, "candidate": asdict(self.candidate), "classes": list(self.classes)}
        with atomic_path(path) as tmp, open(tmp, "wb") as f:
            pickle.dump(state, f)

    @classmethod
    def load(cls, path: Pathlike) -> PauseClassifier:
        with open(path, "rb") as f:
            state = pickle.load(f)
        return cls(state["estimator"], PauseCandidate(**state["candidate"]), tuple(state["classes"]))


def fit(
    candidate: PauseCandidate,
    config: PauseConfig,
    features: np.ndarray,
    labels: np.ndarray,
    classes: Sequence[str],
    seed: int,
) -> PauseClassifier:
    """``candidate`` fit on (N, F) features and (N,) class ids."""
    if len(np.unique(labels)) < 2:
        raise ValueError(f"the training words hold {len(np.unique(labels))} class(es): nothing to learn")
    estimator = candidate.estimator(config, seed)
    estimator.fit(features, labels)
    return PauseClassifier(estimator, candidate, tuple(classes))


@dataclass
class GridPoint:
    """A candidate's dev scores."""

    candidate: PauseCandidate
    overall_f1: float  # micro-average over the marks
    macro_f1: float

    def f1(self, metric: str) -> float:
        """The dev F1 of ``metric`` (one of ``METRICS``)."""
        return self.overall_f1 if metric == "overall" else self.macro_f1

    def to_dict(self) -> dict:
        return {
            **asdict(self.candidate),
            "name": self.candidate.describe(),
            "dev_overall_f1": self.overall_f1,
            "dev_macro_f1": self.macro_f1,
        }


@dataclass
class PauseChoice:
    """The dev grid and the candidate chosen on it."""

    grid: list[GridPoint]
    chosen: int  # index into grid
    metric: str = "overall"  # the dev F1 compared (METRICS)

    @property
    def best(self) -> GridPoint:
        return self.grid[self.chosen]

    def to_dict(self) -> dict:
        return {
            "rule": f"highest dev {self.metric} F1 (ties: the earlier candidate)",
            "grid": [p.to_dict() for p in self.grid],
            "chosen": self.best.to_dict(),
        }


def choose_on_dev(
    train: tuple[np.ndarray, np.ndarray],
    dev: tuple[np.ndarray, np.ndarray],
    classes: Sequence[str],
    config: PauseConfig,
    seed: int,
    metric: str = "overall",
) -> tuple[PauseClassifier, PauseChoice]:
    """Fits every candidate on ``train`` (features, class ids), scores it on ``dev``; returns the chosen (the
    highest dev F1 of ``metric``: overall = micro-average over the marks, or macro; ties: the earlier candidate)
    and the grid."""
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {list(METRICS)}, got {metric!r}")
    if not len(dev[1]):
        raise ValueError("no dev words to choose a candidate on")
    grid: list[GridPoint] = []
    best, best_model = -1, None
    for i, candidate in enumerate(candidates(config)):
        model = fit(candidate, config, *train, classes, seed)
        s = score(dev[1], model.predict(dev[0]), classes)
        grid.append(GridPoint(candidate, s.overall["f1"], s.macro_f1))
        logging.info("%s: dev overall F1 %.4f, macro F1 %.4f", candidate.describe(), s.overall["f1"], s.macro_f1)
        if best < 0 or grid[i].f1(metric) > grid[best].f1(metric):
            best, best_model = i, model
    return best_model, PauseChoice(grid, best, metric)
