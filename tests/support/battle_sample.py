"""Battles served as a fresh Space serves them, and what a voter would hear in each (issue 22's 200-battle tests)."""
from __future__ import annotations

import os
import shutil
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from arena.core import distinct
from arena.services.service import ArenaService


@dataclass
class Sample:
    pairs: dict                                   # ArenaService.left_out_pairs() after the clips were measured
    identical: int = 0                            # battles whose two clips are the same bytes
    same_words: int = 0                           # battles whose two replies say the same words (distinct.words_key)
    met: Counter = field(default_factory=Counter)  # battles per pair of models


def _heard_pool() -> Path | None:
    """Where scripts/test.sh's run keeps heard clips for its second pass (EMPATHY_ARENA_TEST_CACHE), or None."""
    folder = os.environ.get("EMPATHY_ARENA_TEST_CACHE")
    return Path(folder) / "heard" if folder else None


def _copy_missing(src: Path, dst: Path) -> None:
    """Every file under `src` that `dst` lacks, copied (each written whole, then renamed: two workers may share)."""
    for path in src.rglob("*"):
        target = dst / path.relative_to(src)
        if path.is_file() and not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            partial = target.with_name(f".{target.name}.{os.getpid()}")
            shutil.copyfile(path, partial)
            partial.replace(target)


def sample_battles(svc: ArenaService, n: int = 200, wait_s: float = 900) -> Sample:
    """Measure every clip (the arena's background work), then serve `n` battles to `n` sessions from many
    addresses, reading each battle's clips through the arena as the page does.

    Under scripts/test.sh the heard clips made on the SQLite pass are kept and the PostgreSQL pass starts with
    them: a heard clip is files only, named by its source's sha256 and the recipe (arena/services/battle_audio.py),
    so the second pass measures only the clips the first did not make, and everything it checks (the pairs left
    out, the clips served, the store) is its own; tests/test_battle_audio.py makes and checks clips every time."""
    pool = _heard_pool()
    if pool is not None and pool.is_dir():
        _copy_missing(pool, svc.heard.folder)
    svc.left_out_pairs()
    assert svc.heard.wait_idle(wait_s)
    if pool is not None:
        _copy_missing(svc.heard.folder, pool)
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
