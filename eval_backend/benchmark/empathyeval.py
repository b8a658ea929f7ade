"""Reader for EmpathyEval (HumOmni 2026 Track 1) selection items.

Input: a JSON file (or a folder of them) holding a list of items, or a dict of
items keyed by id:
    {question_id, context, utterance, utterance_audio, response, options: {"opt-A": path, ...}}
Paths are relative to the JSON file's folder. `response` is the right option
("B", "opt-B", "Option B").

Groups: items sharing the question_id prefix (everything before the last "_":
gigaspeech_0_1 -> gigaspeech_0) form a group.

Kind of a group ("context" or "tone"), first rule that applies:
  1. an explicit field on an item (kind / variation / type / setting) naming "tone" or "context";
  2. the id starts with "emovdb" (EMOV-DB is read speech in several emotions: tone variation);
  3. two items of the group share the context text but have different utterance audio
     (same situation, different voice: tone variation);
  4. otherwise "context" (MELD / GigaSpeech: one utterance under several contexts).
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from .. import safejson
from .dataset import MAX_JSON_BYTES, audio_ref_from_file, content_hash, flag_bad
from .model import AudioRef, Benchmark, SelectionItem

KIND_KEYS = ("kind", "variation", "variation_type", "type", "setting")
ATTRIBUTE_KEYS = ("attribute", "emotion", "tone", "style")


def group_of(question_id: str) -> str:
    return question_id.rsplit("_", 1)[0] if "_" in question_id else question_id


def option_letter(key: Any) -> str | None:
    m = re.fullmatch(r"\W*(?:opt(?:ion)?[\s_\-]*)?([A-Ha-h])\W*", str(key).strip(), re.IGNORECASE)
    return m.group(1).upper() if m else None


def _explicit_kind(item: dict) -> str | None:
    for k in KIND_KEYS:
        v = str(item.get(k) or "").lower()
        if "tone" in v:
            return "tone"
        if "context" in v:
            return "context"
    return None


def _items(doc: Any) -> list[dict]:
    if isinstance(doc, list):
        return [x for x in doc if isinstance(x, dict)]
    if isinstance(doc, dict):
        for k in ("items", "data", "questions"):
            if isinstance(doc.get(k), list):
                return _items(doc[k])
        return [dict(v, question_id=v.get("question_id", k)) for k, v in doc.items() if isinstance(v, dict)]
    return []


def _ref(base: Path, rel: Any, label: str) -> AudioRef:
    if isinstance(rel, dict):
        rel = next((rel[k] for k in ("audio", "path", "audio_path", "file") if rel.get(k)), None)
    if not rel:
        return AudioRef(None, None, f"{label}: no audio file named")
    path = Path(str(rel))
    return audio_ref_from_file(path if path.is_absolute() else base / path, label)


def _option_text(value: Any) -> str | None:
    if isinstance(value, dict):
        t = next((value[k] for k in ("text", "transcript", "response") if value.get(k)), None)
        return str(t) if t is not None else None
    return None


def _json_files(root: Path) -> list[Path]:
    if root.is_file():
        return [root]
    if root.is_dir():
        return sorted(p for p in root.glob("*.json") if p.is_file())
    raise ValueError(f"empathyeval: {root} does not exist")


def load_empathyeval(path: str | Path) -> Benchmark:
    root = Path(path).expanduser()
    b = Benchmark(name="empathyeval", version="local", source=f"empathyeval:{root}")
    raw: list[tuple[dict, Path]] = []
    for f in _json_files(root):
        try:
            doc = safejson.loads(f.read_text(encoding="utf-8"), max_bytes=MAX_JSON_BYTES, what="the file")
        except (OSError, ValueError) as exc:     # JSONLimitError (too deep, too large) is a ValueError
            raise ValueError(f"empathyeval: {f} is not readable JSON ({exc})") from None
        raw += [(it, f.parent) for it in _items(doc) if "options" in it or "question_id" in it]
    if not raw:
        raise ValueError(f"empathyeval: no items ({{question_id, options, ...}}) found in {root}")

    seen: set[str] = set()
    for n, (it, base) in enumerate(raw):
        qid = str(it.get("question_id") or f"item_{n}")
        if qid in seen:
            raise ValueError(f"empathyeval: question_id {qid!r} appears twice")
        seen.add(qid)
        flags: list[str] = []
        audio = _ref(base, it.get("utterance_audio"), "utterance audio")
        flag_bad(flags, audio)
        options: dict[str, AudioRef] = {}
        texts: dict[str, str] = {}
        raw_opts = it.get("options") or {}
        if isinstance(raw_opts, list):  # a list is taken in letter order
            raw_opts = {chr(65 + i): v for i, v in enumerate(raw_opts)}
        for key, value in (raw_opts.items() if isinstance(raw_opts, dict) else []):
            letter = option_letter(key)
            if letter is None:
                flags.append(f"options: key {key!r} is not an option letter")
                continue
            options[letter] = _ref(base, value, f"option {letter} audio")
            flag_bad(flags, options[letter])
            if _option_text(value) is not None:
                texts[letter] = _option_text(value)
        if len(options) < 2:
            flags.append(f"options: {len(options)} usable option(s), need at least 2")
        answer = option_letter(it.get("response", it.get("answer", "")))
        if answer is None or answer not in options:
            flags.append(f"answer: {it.get('response', it.get('answer'))!r} names no option")
            answer = ""
        attribute = next((str(it[k]) for k in ATTRIBUTE_KEYS if it.get(k)), None)
        b.selection.append(SelectionItem(qid, group_of(qid), _explicit_kind(it) or "", str(it.get("context") or ""),
                                         it.get("utterance"), audio, dict(sorted(options.items())), answer, texts,
                                         attribute, flags))
    _assign_kinds(b.selection)
    content_hash(b)
    return b


def _assign_kinds(items: list[SelectionItem]) -> None:
    """Rules 1-4 of the module doc, decided per group so a group never mixes kinds."""
    groups: dict[str, list[SelectionItem]] = {}
    for it in items:
        groups.setdefault(it.group_id, []).append(it)
    for gid, members in groups.items():
        explicit = {m.kind for m in members if m.kind}
        if len(explicit) == 1:
            kind = explicit.pop()
        elif gid.lower().startswith("emovdb"):
            kind = "tone"
        else:
            by_context: dict[str, set] = {}
            for m in members:
                by_context.setdefault(m.context.strip(), set()).add(m.audio.sha256 or m.audio.path)
            kind = "tone" if any(len(v) > 1 for v in by_context.values()) else "context"
        for m in members:
            m.kind = kind
