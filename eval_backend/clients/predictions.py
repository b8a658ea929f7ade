"""Replies of a model run elsewhere, from a predictions file, as Reply rows.

Format: a UTF-8 JSONL file, one JSON object per line (blank lines and lines
starting with `#` are ignored), plus a folder of wav files.

    {"id": "conversation/s001/target", "text": "Oh no, that sounds hard.", "audio": "s001_target.wav"}
    {"task": "tone", "item_id": "g3", "variant": "sad", "text": "...", "transcript": "...", "latency_s": 1.8}
    {"id": "mcq_reasoning/q17/-", "text": "The answer is: B"}
    {"id": "context/g2/c1", "error_class": "timeout", "error_message": "no reply in 60 s"}

Fields:
- `id`: the request id `task/item_id/variant` (see `python -m eval_backend benchmark info`); or instead
  `task` + `item_id` + `variant` (`variant` defaults to "-", the value for tasks without variants).
  When both are given they must agree.
- `text` (string): the model's text reply. `transcript` (string): the words of its spoken reply.
- `audio` (string): path of the spoken reply's wav, relative to the audio folder (default: the JSONL's
  folder); an absolute path is used as is.
- `latency_s`, `ttfab_s` (numbers, optional): timings measured where the model ran.
- `error_class` (one of timeout, http_4xx, http_5xx, rate_limited, malformed_body, bad_audio) and
  `error_message`: the request failed where the model ran; stored as a failed reply.

Rules: a line that is not a JSON object, lacks an id, has a field of the wrong type, an unknown error
class, or repeats an id makes the whole file rejected (`PredictionsError` lists every such line), so a
broken file stores nothing. An audio file that is missing, undecodable or truncated gives a `bad_audio`
failure for its item; a line with neither text nor audio gives `malformed_body`. A request with no
line gets no reply; a line for an id outside the run is reported and ignored.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from ..audio.io import BadAudio, decode_wav_bytes
from ..store import FAILURE_CLASSES, Reply
from ..tasks import Request, make_id
from .openai_chat import check_wav_complete

STRING_FIELDS = ("id", "task", "item_id", "variant", "text", "transcript", "audio", "error_class", "error_message")
NUMBER_FIELDS = ("latency_s", "ttfab_s")


class PredictionsError(ValueError):
    """The file is not a valid predictions file; the message lists every bad line."""


@dataclass
class LoadedPredictions:
    replies: list[tuple[Reply, bytes | None]] = field(default_factory=list)   # (reply, wav bytes to store)
    unknown_ids: list[str] = field(default_factory=list)
    missing_ids: list[str] = field(default_factory=list)


def _line_id(obj: dict) -> str:
    rid = obj.get("id")
    if obj.get("task") is not None or obj.get("item_id") is not None:
        if not obj.get("task") or not obj.get("item_id"):
            raise ValueError("`task` and `item_id` go together")
        built = make_id(obj["task"], obj["item_id"], obj.get("variant") or "-")
        if rid is not None and rid != built:
            raise ValueError(f"id {rid!r} disagrees with task/item_id/variant {built!r}")
        return built
    if not rid:
        raise ValueError("no `id` (nor `task` + `item_id`)")
    if rid.count("/") < 2:
        raise ValueError(f"id {rid!r} is not of the form task/item_id/variant")
    if obj.get("variant") is not None and rid.rsplit("/", 1)[1] != obj["variant"]:
        raise ValueError(f"id {rid!r} disagrees with variant {obj['variant']!r}")
    return rid


def parse_lines(text: str) -> dict[str, tuple[int, dict]]:
    """id -> (line number, object); raises PredictionsError listing every bad line."""
    out: dict[str, tuple[int, dict]] = {}
    problems: list[str] = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            obj = json.loads(line)
            if not isinstance(obj, dict):
                raise ValueError("not a JSON object")
            for k in STRING_FIELDS:
                if obj.get(k) is not None and not isinstance(obj[k], str):
                    raise ValueError(f"`{k}` must be a string")
            for k in NUMBER_FIELDS:
                if obj.get(k) is not None and (isinstance(obj[k], bool) or not isinstance(obj[k], (int, float))):
                    raise ValueError(f"`{k}` must be a number")
            if obj.get("error_class") is not None and obj["error_class"] not in FAILURE_CLASSES:
                raise ValueError(f"error_class {obj['error_class']!r} is not one of {', '.join(FAILURE_CLASSES)}")
            rid = _line_id(obj)
            if rid in out:
                raise ValueError(f"id {rid!r} repeats line {out[rid][0]}")
            out[rid] = (n, obj)
        except ValueError as exc:   # json.JSONDecodeError is a ValueError
            problems.append(f"line {n}: {exc}")
    if problems:
        shown = "\n  ".join(problems[:50]) + (f"\n  ... and {len(problems) - 50} more" if len(problems) > 50 else "")
        raise PredictionsError(f"{len(problems)} bad line(s) in the predictions file:\n  {shown}")
    return out


def _read_audio(path: Path) -> bytes:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise BadAudio(f"cannot read {path}: {exc.strerror or exc}") from None
    decode_wav_bytes(data)
    check_wav_complete(data)
    return data


def to_reply(req: Request, obj: dict, line: str, model: str, benchmark_hash: str,
             audio_dir: Path) -> tuple[Reply, bytes | None]:
    base = dict(model=model, benchmark_hash=benchmark_hash, request_id=req.id, task=req.task,
                item_id=req.item_id, variant=req.variant, raw=line,
                latency_s=obj.get("latency_s"), ttfab_s=obj.get("ttfab_s"))
    if obj.get("error_class"):
        return Reply(status="failed", error_class=obj["error_class"],
                     error_message=obj.get("error_message") or "failed where the model ran", **base), None
    audio = None
    if obj.get("audio"):
        path = Path(obj["audio"])
        path = path if path.is_absolute() else audio_dir / path
        try:
            audio = _read_audio(path)
        except BadAudio as exc:
            return Reply(status="failed", error_class="bad_audio", error_message=str(exc), **base), None
    text = obj.get("text") if (obj.get("text") or "").strip() else None
    if text is None and audio is None:
        return Reply(status="failed", error_class="malformed_body",
                     error_message="predictions line has neither text nor audio", **base), None
    return Reply(status="ok", text=text, transcript=obj.get("transcript"), **base), audio


def load_predictions(path: str | Path, requests: list[Request], model: str, benchmark_hash: str,
                     audio_dir: str | Path | None = None) -> LoadedPredictions:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise PredictionsError(f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise PredictionsError(f"{path} is not UTF-8: {exc}") from None
    lines = parse_lines(text)
    audio_root = Path(audio_dir) if audio_dir else path.parent
    wanted = {r.id: r for r in requests}
    out = LoadedPredictions()
    for rid, (n, obj) in lines.items():
        req = wanted.get(rid)
        if req is None:
            out.unknown_ids.append(rid)
            continue
        out.replies.append(to_reply(req, obj, json.dumps(obj, ensure_ascii=False), model, benchmark_hash, audio_root))
    out.missing_ids = [rid for rid in wanted if rid not in lines]
    return out
