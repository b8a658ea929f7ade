"""How close a held-apart set comes to the semantic layer's example bank (issue 26): the highest MiniLM cosine
between each held-apart sentence and any bank sentence. A held-apart sentence within MAX_COSINE of a bank sentence
is a near copy, and its figure would measure memory, not generalisation.

It reports counts and the held-apart side only — never the bank sentence that came close — so that whoever writes
one set is not shown the other to tune on. `python -m tests.support.safety_overlap` prints the figures for v3;
tests/test_safety_generalises.py asserts them.
"""
from __future__ import annotations

import numpy as np

MAX_COSINE = 0.8


def nearest_bank_cosines(sentences: dict[str, list[str]]) -> dict[str, np.ndarray]:
    """{label: highest cosine to any bank sentence, one per held-apart sentence}."""
    from eval_backend.safety import bank, semantic
    bank_texts = [t for label in bank.LABELS for t in bank.BANK[label]]
    bank_vectors = semantic._embed(bank_texts)
    return {label: (semantic._embed(texts) @ bank_vectors.T).max(axis=1) for label, texts in sentences.items()}


def too_close(sentences: dict[str, list[str]]) -> list[tuple[str, str, float]]:
    """(label, held-apart sentence, cosine) for every held-apart sentence within MAX_COSINE of the bank."""
    cosines = nearest_bank_cosines(sentences)
    return [(label, text, float(c)) for label, texts in sentences.items()
            for text, c in zip(texts, cosines[label]) if c >= MAX_COSINE]


if __name__ == "__main__":
    from tests.support.safety_held_apart_v3 import HELD_APART_26_V3
    cosines = nearest_bank_cosines(HELD_APART_26_V3)
    for label, values in cosines.items():
        print(f"{label}: n={len(values)} max={values.max():.3f} median={np.median(values):.3f} "
              f">= {MAX_COSINE}: {int((values >= MAX_COSINE).sum())}")
    for label, text, c in too_close(HELD_APART_26_V3):
        print(f"too close ({c:.3f}, {label}): {text}")
