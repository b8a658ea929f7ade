"""Battles served as a fresh Space serves them, and what a voter would hear in each (issue 22's 200-battle tests)."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from arena.core import distinct
from arena.services.service import ArenaService


@dataclass
class Sample:
    pairs: dict                                   # ArenaService.left_out_pairs() after the clips were measured
    identical: int = 0                            # battles whose two clips are the same bytes
    same_words: int = 0                           # battles whose two replies say the same words (distinct.words_key)
    met: Counter = field(default_factory=Counter)  # battles per pair of models


def sample_battles(svc: ArenaService, n: int = 200, wait_s: float = 900) -> Sample:
    """Measure every clip (the arena's background work), then serve `n` battles to `n` sessions from many
    addresses, reading each battle's clips through the arena as the page does."""
    svc.left_out_pairs()
    assert svc.heard.wait_idle(wait_s)
    out = Sample(svc.left_out_pairs())
    for i in range(n):
        view = svc.serve_battle(f"s{i}", f"10.0.{i // 250}.{i % 250}")
        row = svc.store.query("SELECT model_a, model_b, benchmark_hash, request_id FROM arena_battles WHERE id=?",
                              (view.battle_id,))[0]
        texts = svc.store.reply_texts(row["benchmark_hash"], row["request_id"], (row["model_a"], row["model_b"]))
        a, b = svc.battle_clip(view.battle_id, "A"), svc.battle_clip(view.battle_id, "B")
        out.identical += a.read_bytes() == b.read_bytes()
        out.same_words += distinct.words_key(texts[row["model_a"]]) == distinct.words_key(texts[row["model_b"]])
        out.met[frozenset((row["model_a"], row["model_b"]))] += 1
    return out
