"""A live battle's clips as heard, and whether its two replies differ (issues 22: arena/battle_audio.py, distinct.py).

Each clip's heard version (one format, one loudness) is made once per battle, by content: the check that the two
replies differ measures them, and the battle's folder then receives the same bytes. Measuring (pitch, rate) is
needed only when the two replies say the same words; replies with different words are judged on their words alone.

    heard = LiveHeard()
    why = heard.same(text_a, wav_a, text_b, wav_b)   # None when they differ; else distinct.IDENTICAL_AUDIO | ...
    clips = heard.write(folder, {"user": user_wav, "A": wav_a, "B": wav_b})   # {clip: HeardClip}
"""
from __future__ import annotations

import hashlib
from pathlib import Path

from . import distinct
from .battle_audio import Delivery, HeardClip, make_heard, write_named

VOID_SAME = ("the two models gave the same reply and no other model was free to answer instead, so this battle is "
             "void (nothing was kept); please try again")


class LiveHeard:
    def __init__(self) -> None:
        self._made: dict[str, tuple[bytes, dict]] = {}      # sha256 of the source -> (heard wav, facts)

    def make(self, data: bytes, measure: bool = False) -> tuple[str, bytes, dict]:
        sha = hashlib.sha256(data).hexdigest()
        got = self._made.get(sha)
        if got is None or (measure and "delivery" not in got[1]):
            got = self._made[sha] = make_heard(data, measure)
        return sha, *got

    def facts(self, words: str | None, data: bytes, measure: bool) -> distinct.ClipFacts:
        sha, _, facts = self.make(data, measure) if measure else (hashlib.sha256(data).hexdigest(), b"", {})
        d = facts.get("delivery")
        return distinct.ClipFacts(distinct.words_key(words), sha, Delivery(**d) if d else None)

    def same(self, words_a: str | None, wav_a: bytes, words_b: str | None, wav_b: bytes) -> str | None:
        """Why these two replies are not worth a battle (distinct.REASONS), or None when they differ."""
        a, b = self.facts(words_a, wav_a, False), self.facts(words_b, wav_b, False)
        if a.sha256 != b.sha256 and distinct.same_words(a, b):
            a, b = self.facts(words_a, wav_a, True), self.facts(words_b, wav_b, True)
        return distinct.verdict(a, b)

    def write(self, folder: Path, sources: dict[str, bytes]) -> dict[str, HeardClip]:
        """`folder/<clip>.heard.wav` and its facts for every clip (the originals are the caller's)."""
        return {name: write_named(folder, name, *self.make(data)) for name, data in sources.items()}
