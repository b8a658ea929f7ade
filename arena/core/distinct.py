"""No battle between identical replies (issue 22): which pairs of replies differ enough to be worth a vote (pure).

A voter asked to choose between one clip played twice learns nothing and wastes a vote. Two replies to the same
request are *left out* of matchmaking when

- `identical_audio`: their audio files have the same bytes (sha256), or
- `same_words_same_delivery`: they say the same words after normalisation (`words_key`: Unicode NFKC, case folded,
  punctuation and spacing ignored) **and** sound alike as the voter hears them (the heard clips of
  arena/services/battle_audio.py, all at one loudness): every delivery feature within `Tolerance` —
  length within max(0.15 s, 3%), loudness within 1 LU, median pitch within 1 semitone (or both unvoiced),
  speaking rate within 5%, speech time within max(0.15 s, 5%). The tolerances sit just above what one voice
  re-synthesising the same words varies by (the same TTS with another seed or codec), and well below what a
  different voice or a different delivery changes (another speaker's pitch, a slower or softer rendering);
- `not_measured`: they say the same words (or no words are known) and their delivery is not measured yet: left
  out until the background measurement (arena/services/battle_audio.py) decides, never served on a guess.

Replies with different words are never left out (they need no measurement). Same words with a clearly different
delivery stay servable ("how it sounded" is a real question), but the request choice prefers pairs whose words
differ (`pick_request`), so same-word battles are rare whenever a pair has other requests.
"""
from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass
from typing import Protocol, Sequence

IDENTICAL_AUDIO = "identical_audio"
SAME_DELIVERY = "same_words_same_delivery"
NOT_MEASURED = "not_measured"
REASONS = (IDENTICAL_AUDIO, SAME_DELIVERY, NOT_MEASURED)
REASON_TEXT = {IDENTICAL_AUDIO: "identical audio", SAME_DELIVERY: "same words, same delivery",
               NOT_MEASURED: "same words, delivery not measured yet"}
_NOT_WORD = re.compile(r"[^\w]+")


class DeliveryLike(Protocol):
    duration_s: float
    speech_s: float
    lufs: float | None
    pitch_median_hz: float | None
    speaking_rate: float


@dataclass(frozen=True)
class Tolerance:
    duration_s: float = 0.15
    duration_share: float = 0.03
    lufs: float = 1.0
    pitch_st: float = 1.0
    rate_share: float = 0.05
    speech_share: float = 0.05


@dataclass(frozen=True)
class ClipFacts:
    """What the rule needs of one reply: its words, its audio's hash, its heard delivery (None: not measured)."""
    words: str | None
    sha256: str
    delivery: DeliveryLike | None = None


def words_key(text: str | None) -> str | None:
    """The words of a reply, normalised: NFKC, case folded, every run of non-word characters one space."""
    if not text:
        return None
    key = _NOT_WORD.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()
    return key or None


def _near(a: float, b: float, absolute: float, share: float) -> bool:
    return abs(a - b) <= max(absolute, share * max(abs(a), abs(b)))


def same_delivery(a: DeliveryLike, b: DeliveryLike, tol: Tolerance = Tolerance()) -> bool:
    """Every delivery feature within the tolerance (see the module doc)."""
    if not _near(a.duration_s, b.duration_s, tol.duration_s, tol.duration_share):
        return False
    if not _near(a.speech_s, b.speech_s, tol.duration_s, tol.speech_share):
        return False
    if (a.lufs is None) != (b.lufs is None) or (a.lufs is not None and b.lufs is not None
                                                 and abs(a.lufs - b.lufs) > tol.lufs):
        return False
    pa, pb = a.pitch_median_hz, b.pitch_median_hz
    if (pa is None) != (pb is None) or (pa and pb and abs(12 * math.log2(pa / pb)) > tol.pitch_st):
        return False
    return _near(a.speaking_rate, b.speaking_rate, 0.0, tol.rate_share)


def same_words(a: ClipFacts, b: ClipFacts) -> bool:
    """Not known to differ: equal words, or either reply's words unknown (then only the audio can tell)."""
    return a.words is None or b.words is None or a.words == b.words


def verdict(a: ClipFacts, b: ClipFacts, tol: Tolerance = Tolerance()) -> str | None:
    """Why this pair of replies is left out (one of REASONS), or None when it is worth a vote."""
    if a.sha256 == b.sha256:
        return IDENTICAL_AUDIO
    if not same_words(a, b):
        return None
    if a.delivery is None or b.delivery is None:
        return NOT_MEASURED
    return SAME_DELIVERY if same_delivery(a.delivery, b.delivery, tol) else None


class CandidateLike(Protocol):
    replies: dict
    left_out: dict
    same_words: set


def model_pairs(models) -> list[tuple[str, str]]:
    names = sorted(models)
    return [(names[i], names[j]) for i in range(len(names)) for j in range(i + 1, len(names))]


def left_out_counts(candidates: Sequence[CandidateLike]) -> dict:
    """The health view's numbers: request pairs (one request, two models) servable and left out, by reason."""
    total = sum(len(model_pairs(c.replies)) for c in candidates)
    reasons = Counter(r for c in candidates for r in c.left_out.values())
    same = sum(len(c.same_words) for c in candidates)
    left = sum(reasons.values())
    return {"request_pairs": total, "servable": total - left, "same_words_servable": same,
            "left_out": {r: reasons.get(r, 0) for r in REASONS}}


def pick_request(shared: Sequence[CandidateLike], pair: tuple[str, str], rng):
    """One request for this pair: among those where the pair is not left out, one whose words differ when any
    does (same-word battles only when a pair has nothing else)."""
    key = tuple(sorted(pair))
    usable = [c for c in shared if key not in c.left_out]
    differ = [c for c in usable if key not in c.same_words]
    return rng.choice(differ or usable)


def screen(candidates: Sequence[CandidateLike], words_of, sha_of, delivery_of,
           tol: Tolerance = Tolerance()) -> tuple[set[tuple[str, str]], list]:
    """Judge every pair of replies of every candidate request: sets each candidate's `left_out` ({pair: reason})
    and `same_words` (servable pairs whose words are not known to differ). Returns (the model pairs servable on
    at least one request, the replies whose delivery is needed and not measured yet). `words_of(reply)`,
    `sha_of(reply)` and `delivery_of(reply)` (None: not measured) are the caller's; delivery is asked only for
    pairs whose words and audio do not already decide."""
    pairs: set[tuple[str, str]] = set()
    pending = []
    for c in candidates:
        c.left_out, c.same_words = {}, set()
        facts = {m: ClipFacts(words_of(r), sha_of(r)) for m, r in c.replies.items()}
        for a, b in model_pairs(c.replies):
            fa, fb = facts[a], facts[b]
            if fa.sha256 != fb.sha256 and same_words(fa, fb):
                for m in (a, b):
                    if facts[m].delivery is None:
                        facts[m] = ClipFacts(facts[m].words, facts[m].sha256, delivery_of(c.replies[m]))
                        if facts[m].delivery is None:
                            pending.append(c.replies[m])
                fa, fb = facts[a], facts[b]
            why = verdict(fa, fb, tol)
            if why:
                c.left_out[(a, b)] = why
                continue
            pairs.add((a, b))
            if same_words(fa, fb):
                c.same_words.add((a, b))
    return pairs, pending
