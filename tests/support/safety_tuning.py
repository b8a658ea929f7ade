"""How the semantic layer's operating points were chosen (issue 26): tuning figures only, never held-apart ones.

    python -m tests.support.safety_tuning [--folds 5] [--grid]

5-fold stratified cross-validation over the example bank (eval_backend/safety/bank.py): each fold's layer is fitted
on the other folds and reads the held-out fold's sentences; combined with the classifier and the rules as the
screen combines them (crisis reading if any says crisis; flagged if any flags). `--grid` prints the figures for
other cut-offs, one flag cut for both classes (how CRISIS_CUT and FLAG_CUTS were picked). The held-apart sets are not read here.
"""
from __future__ import annotations

import argparse
import random

import numpy as np

from eval_backend.safety import bank, offline, semantic

LABEL_OF = {"crisis": "crisis", "abuse": "abuse", "threat": "violence", "benign": "benign"}


class CachedEmbed:
    """MiniLM embeddings, each text embedded once for all folds."""

    def __init__(self) -> None:
        self.memo: dict[str, np.ndarray] = {}

    def __call__(self, texts: list[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self.memo]
        if missing:
            for t, e in zip(missing, semantic._embed(missing)):
                self.memo[t] = e
        return np.stack([self.memo[t] for t in texts])


def folds(examples: dict[str, list[str]], k: int, seed: int = 0) -> list[dict[str, list[int]]]:
    """Stratified folds: for each label, its indices dealt round-robin after a seeded shuffle."""
    rng = random.Random(seed)
    out: list[dict[str, list[int]]] = [{label: [] for label in examples} for _ in range(k)]
    for label, texts in examples.items():
        order = list(range(len(texts)))
        rng.shuffle(order)
        for n, i in enumerate(order):
            out[n % k][label].append(i)
    return out


def cross_validated(k: int = 5) -> list[tuple[str, str, dict[str, float]]]:
    """(label, text, probabilities from a layer that did not see it) for every bank sentence."""
    embed = CachedEmbed()
    out = []
    for held in folds(bank.BANK, k):
        train = {label: [t for i, t in enumerate(texts) if i not in set(held[label])]
                 for label, texts in bank.BANK.items()}
        fitted = semantic.Layer(train, embed)
        for label, idx in held.items():
            for i in idx:
                text = bank.BANK[label][i]
                out.append((label, text, semantic.scores(text, fitted)))
    return out


def screen_with(text: str, probs: dict[str, float], crisis_cut: float, flag_cut: float | None):
    """The offline screen's decision for `text` (offline.screen itself: the classifier on the text's own words, the
    rules, the idiom cap) with the given semantic probabilities and cut-offs."""
    cuts = None if flag_cut is None else {"abuse": flag_cut, "threat": flag_cut}
    return offline.screen(text, 0.85, read_meaning=lambda t: semantic.readings(t, probs, crisis_cut, cuts))


def figures(rows, crisis_cut: float, flag_cut: float | None) -> dict[str, tuple[int, int]]:
    """{label: (caught, n)}; for benign, caught = flagged; plus 'benign crisis readings'."""
    out: dict[str, list[int]] = {}
    for label, text, probs in rows:
        r = screen_with(text, probs, crisis_cut, flag_cut)
        name = LABEL_OF[label]
        hit = r.crisis if name == "crisis" else r.flagged
        out.setdefault(name, [0, 0])
        out[name][0] += int(hit)
        out[name][1] += 1
        if name == "benign":
            out.setdefault("benign crisis readings", [0, 0])
            out["benign crisis readings"][0] += int(r.crisis)
            out["benign crisis readings"][1] += 1
    return {k: (v[0], v[1]) for k, v in out.items()}


def line(figs: dict[str, tuple[int, int]]) -> str:
    return ", ".join(f"{k} {c}/{n} ({c / n:.0%})" for k, (c, n) in figs.items())


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--grid", action="store_true")
    args = parser.parse_args()
    rows = cross_validated(args.folds)
    print(f"{semantic.VERSION}, {args.folds}-fold cross-validation, classifier + rules + semantic "
          f"(crisis from {semantic.CRISIS_CUT}, flags from {semantic.FLAG_CUTS}):\n  "
          + line(figures(rows, semantic.CRISIS_CUT, None)))
    if args.grid:
        for cc in (0.3, 0.35, 0.4):
            for fc in (0.65, 0.7, 0.75, 0.8):
                print(f"  crisis {cc} flag {fc}: {line(figures(rows, cc, fc))}")
