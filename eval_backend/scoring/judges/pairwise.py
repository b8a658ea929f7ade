"""Pairwise judging: the judge's verdict on two models' replies to one request, asked in both orders."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ...tasks import SPOKEN_TASKS, describe_request
from ..judge_prompts import PAIRWISE, PAIRWISE_AUDIO
from ..registry import reply_text
from .client import Judges, Judgment, make_judges, run_judge
from .rendering import context_text, injection_flags


@dataclass
class PairVerdict:
    request_id: str
    model_a: str
    model_b: str
    verdict: str | None           # "A" | "B" | "tie"; None when the judge failed or a reply is missing
    orders: dict[str, str | None]  # {"AB": "A"/"B"/"tie"/None, "BA": ...}
    consistent: bool | None       # both orders named the same winner (or both tie)
    flags: dict[str, list[str]]
    error: str | None = None
    judge: str | None = None      # "text" | "audio": which judge gave the verdict


def _order_winner(j: Judgment, first: str, second: str) -> str | None:
    """Majority over the readable samples of one order (1 -> first, 2 -> second, tie)."""
    if not j.ok:
        return None
    votes = [smp["values"]["winner"] for smp in j.samples if smp.get("values")]
    score = sum(+1 if v == 1.0 else -1 if v == 2.0 else 0 for v in votes)
    return first if score > 0 else second if score < 0 else "tie"


def combine_orders(ab: str | None, ba: str | None) -> str | None:
    """Both orders agree -> that; one tie -> the other; they contradict -> tie (position bias cancelled)."""
    if ab is None or ba is None:
        return None
    if ab == ba:
        return ab
    if "tie" in (ab, ba):
        return ab if ba == "tie" else ba
    return "tie"


def judge_pair(request_id: str, model_a: str, model_b: str, *, store, benchmark, settings: dict | None = None,
               judges: Judges | None = None, cache_path: str | Path | None = None, mode: str = "auto") -> PairVerdict:
    """The judge's verdict on A vs B for one request, asked in both orders (reply 1/2 swapped).

    Replies are the models' ok replies for the benchmark's hash in the store. `mode`: "text" (the text
    judge reads both replies' words), "audio" (the audio judge hears the user's clip and both reply
    clips), or "auto" (audio when an audio judge is configured and both replies and the user's clip
    have audio, else text).
    """
    if mode not in ("auto", "text", "audio"):
        raise ValueError(f"mode must be auto, text or audio, not {mode!r}")
    judges = judges or make_judges(settings, cache_path or (store.root / "cache" / "judge_cache.sqlite3"))

    def none(error: str) -> PairVerdict:
        return PairVerdict(request_id, model_a, model_b, None, {}, None, {}, error)
    info = describe_request(benchmark, request_id)
    if info is None or info.task not in SPOKEN_TASKS:
        return none(f"unknown request {request_id}")
    replies = {}
    for m in (model_a, model_b):
        rows = [r for r in store.replies(model=m, benchmark_hash=benchmark.hash)
                if r.request_id == request_id and r.status == "ok"]
        replies[m] = rows[0] if rows else None
        if replies[m] is None:
            return none(f"no ok reply from {m} on {request_id}")
    user_clip = Path(info.user_audio) if info.user_audio else None
    audio_ok = all(r.audio_path for r in replies.values()) and user_clip is not None and user_clip.is_file()
    use_audio = mode == "audio" or (mode == "auto" and judges.audio is not None and audio_ok)
    client = judges.audio if use_audio else judges.text
    if client is None:
        return none("not computed: " + ("no audio-capable judge configured" if use_audio else "no judge configured"))
    plain = {"voice": info.voice_label}
    flags = {"A": injection_flags(reply_text(replies[model_a]) or ""),
             "B": injection_flags(reply_text(replies[model_b]) or "")}
    if use_audio:
        if not audio_ok:
            return none(f"audio judging needs the user's clip and both replies' audio on {request_id}")
        user = user_clip.read_bytes()
        clip = {m: store.abspath(r.audio_path).read_bytes() for m, r in replies.items()}
        ab = run_judge(client, PAIRWISE_AUDIO, {"context": context_text(info)}, plain, [user, clip[model_a], clip[model_b]])
        ba = run_judge(client, PAIRWISE_AUDIO, {"context": context_text(info)}, plain, [user, clip[model_b], clip[model_a]])
    else:
        texts = {m: reply_text(r) for m, r in replies.items()}
        for m, t in texts.items():
            if not t:
                return none(f"no text or transcript for {m} on {request_id}")
        base = {"context": context_text(info), "user": info.user_words}
        ab = run_judge(client, PAIRWISE, {**base, "reply_1": texts[model_a], "reply_2": texts[model_b]}, plain)
        ba = run_judge(client, PAIRWISE, {**base, "reply_1": texts[model_b], "reply_2": texts[model_a]}, plain)
    w_ab, w_ba = _order_winner(ab, "A", "B"), _order_winner(ba, "B", "A")
    verdict = combine_orders(w_ab, w_ba)
    return PairVerdict(request_id, model_a, model_b, verdict, {"AB": w_ab, "BA": w_ba},
                       (w_ab == w_ba) if verdict else None, flags, None if verdict else (ab.error or ba.error),
                       judge="audio" if use_audio else "text")
