"""Reader for EchoMind's published layout (a local copy of the Hub dataset).

A subset folder (data_synthesis/, data_human/, or any folder) holds
    script_info_*.json          cases {case_id, spoken_info, topic, target_audio_info,
                                neutral_audio_info, alternative_audio_info}
    MCQ/understanding.json      [{question_id, audio_dir, audio_name, question, options_text, answer|label|gt}]
    MCQ/reasoning.json
    audio/...                   wavs, possibly in subfolders; names contain spaces:
                                id_{case}_{attribute}_{topic}_{variant}.wav

The field names beyond these are not public, so every reader here is tolerant of
shape: an unreadable part flags its item with a reason instead of stopping the load.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from .. import safejson
from .dataset import MAX_JSON_BYTES, audio_ref_from_file, content_hash, flag_bad
from .model import ATTRIBUTES, MCQ, NEUTRAL, OPTION_LETTERS, VARIANTS, AudioRef, Benchmark, Script, Variant

AUDIO_SUFFIXES = (".wav", ".flac", ".mp3", ".ogg")
ANSWER_KEYS = ("answer", "label", "gt", "ground_truth", "correct_answer")
REPLY_KEYS = ("reference_reply", "reference_response", "response", "reply", "ref_response", "answer_text")
TYPE_KEYS = ("type", "question_type", "task", "task_type", "category", "subtask")

# Wordings seen in file names and labels that are not the vocabulary's own label.
_SYNONYMS = {
    "laugh": "laughter", "laughing": "laughter", "shouting": "shout", "yelling": "shout",
    "whispering": "whisper", "coughing": "cough", "sighing": "sigh", "yawning": "yawn", "moaning": "moan",
    "crying": "sobbing", "sob": "sobbing", "hoarse voice": "hoarse", "tired": "vocal fatigue",
    "fatigue": "vocal fatigue", "out of breath": "breathless", "panting": "breathless",
    "thunder": "thunderstorm", "raining": "rain", "rainy": "rain", "windy": "wind",
    "dog barking": "dogs barking", "dog": "dogs barking", "alarm": "alarm clock", "phone ringing": "ringtone",
    "ringing": "ringtone", "car horn": "honking", "horn": "honking", "ocean waves": "sea waves",
    "waves": "sea waves", "crowd": "crowd chatter", "chatter": "crowd chatter", "clapping": "applause",
    "cheer": "cheering", "kids playing": "children playing", "kids speaking": "children speaking",
    "surprised": "surprise", "fearful": "fear", "scared": "fear", "disgusted": "disgust", "anger": "angry",
    "happiness": "happy", "sadness": "sad", "quickly": "fast", "slowly": "slow",
    "old": "elderly", "elder": "elderly", "senior": "elderly", "kid": "child", "man": "male", "woman": "female",
}
_LOOKUP = sorted({**{k: k for k in ATTRIBUTES}, **_SYNONYMS}.items(), key=lambda kv: -len(kv[0]))


def normalise_attribute(raw: str) -> str:
    """Map a free wording ("sound of wind blowing") to a vocabulary label ("wind"); unknown ones kept as given."""
    text = re.sub(r"[\s_\-]+", " ", str(raw)).strip().lower()
    if text in ATTRIBUTES or text == NEUTRAL:
        return text
    for phrase, label in _LOOKUP:  # longest phrase first: "happy music" before "happy"
        if re.search(rf"\b{re.escape(phrase)}\b", text):
            return label
    return text


# ---------------------------------------------------------------- options and answers
_MARK = r"\(?\s*{L}\s*[\.\):：]"


def parse_options(raw: Any) -> list[str]:
    """Option texts in letter order from a list, a {letter: text} dict, or "A. x\\nB. y" text."""
    if isinstance(raw, dict):
        keyed = {}
        for k, v in raw.items():
            m = re.fullmatch(r"\W*(?:opt(?:ion)?[\s_\-]*)?([A-Ha-h])\W*", str(k))
            if not m:
                raise ValueError(f"option key {k!r} is not a letter")
            letter = m.group(1).upper()
            keyed[letter] = re.sub(r"^" + _MARK.format(L=letter) + r"\s+(?=\S)", "", str(v).strip())
        return [keyed[k] for k in sorted(keyed)]
    if isinstance(raw, list):
        texts = [str(x).strip() for x in raw]
        if texts and all(re.match(_MARK.format(L=OPTION_LETTERS[i]), t) for i, t in enumerate(texts)):
            texts = [re.sub(r"^" + _MARK.format(L=OPTION_LETTERS[i]) + r"\s*", "", t) for i, t in enumerate(texts)]
        return texts
    if isinstance(raw, str):
        lines = [ln.strip() for ln in raw.splitlines() if ln.strip()]
        if len(lines) >= 2 and all(re.match(_MARK.format(L=OPTION_LETTERS[i]), ln)
                                   for i, ln in enumerate(lines[:len(OPTION_LETTERS)])) \
                and len(lines) <= len(OPTION_LETTERS):
            # One option per line: "Plan B. Go" inside a line stays whole.
            return [re.sub(r"^" + _MARK.format(L=OPTION_LETTERS[i]) + r"\s*", "", ln) for i, ln in enumerate(lines)]
        # Otherwise cut at each successive letter marker (A, then B after it, ...), inline.
        pos, starts = 0, []
        for letter in OPTION_LETTERS:
            m = re.compile(r"(?:^|(?<=\s))" + _MARK.format(L=letter)).search(raw, pos)
            if not m:
                break
            starts.append((m.start(), m.end()))
            pos = m.end()
        if len(starts) < 2:
            raise ValueError(f"cannot find lettered options in {raw[:80]!r}")
        ends = [s for s, _ in starts[1:]] + [len(raw)]
        return [raw[e:end].strip() for (_, e), end in zip(starts, ends)]
    raise ValueError(f"options of type {type(raw).__name__} are not understood")


def _norm_text(t: str) -> str:
    """Case and punctuation folded; an option of punctuation only keeps its characters."""
    return re.sub(r"[^\w]+", " ", str(t)).strip().lower() or str(t).strip().lower()


def parse_answer(raw: Any, options: list[str]) -> str:
    """The right letter from a letter ("B", "(B)", "B. text", "opt-B") or the option's text."""
    if raw is None:
        raise ValueError("no answer given")
    text = str(raw).strip()
    letters = OPTION_LETTERS[:len(options)]
    bare = re.fullmatch(r"\(?([A-Ha-h])\)?\.?", text)  # "B", "(B)", "b." : a letter, whatever the options say
    if bare and bare.group(1).upper() in letters:
        return bare.group(1).upper()
    # Then the option's own text (exact before folded): "A dog barking" is not letter A.
    for fold in (lambda t: str(t).strip().lower(), _norm_text):
        for i, opt in enumerate(options):
            if fold(opt) == fold(text):
                return letters[i]
    m = re.match(r"^(?:the answer is\s*:?\s*)?(?:opt(?:ion)?[\s_\-]*)?\(?([A-Ha-h])\)?(?:[\.\):：]|\s|$)", text,
                 re.IGNORECASE)
    if m and m.group(1).upper() in letters:
        return m.group(1).upper()
    raise ValueError(f"answer {text!r} matches no option letter or text")


# ---------------------------------------------------------------- files
class AudioIndex:
    """Resolves names written in the JSON to files: exact relative path first, then by file name."""

    def __init__(self, folder: Path):
        self.folder = folder
        self._by_name: dict[str, list[Path]] | None = None

    def by_name(self, name: str) -> list[Path]:
        if self._by_name is None:
            self._by_name = {}
            for p in sorted(self.folder.rglob("*")):
                if p.suffix.lower() in AUDIO_SUFFIXES and p.is_file():
                    self._by_name.setdefault(p.name, []).append(p)
        return self._by_name.get(name, [])

    def resolve(self, *parts: str | None) -> Path | None:
        rel = "/".join(str(p).strip("/") for p in parts if p)
        if not rel:
            return None
        for base in (self.folder / "audio", self.folder):
            if (base / rel).is_file():
                return base / rel
        found = self.by_name(Path(rel).name)
        if len(found) > 1:  # same name in several subfolders: the one whose path ends like the given one
            found = [p for p in found if p.as_posix().endswith("/" + rel)]
        return found[0] if len(found) == 1 else None


def _audio_file_name(info: Any) -> str | None:
    if isinstance(info, str):
        return info or None
    if not isinstance(info, dict):
        return None
    for k, v in info.items():
        if str(k).endswith("_input_audio_file") and isinstance(v, str) and v:
            return v
    for k, v in info.items():  # any path-looking value that is not the reference reply's audio
        if isinstance(v, str) and v.lower().endswith(AUDIO_SUFFIXES) and not _REPLY_AUDIO_KEY.search(str(k)):
            return v
    return None


# The spoken reference reply of a variant: a key naming a reply/response whose value is an audio path,
# in the variant's info dict or on the case as `{variant}_...` (the published key names are not known).
_REPLY_AUDIO_KEY = re.compile(r"respon|repl|answer|output", re.IGNORECASE)


def _reference_audio_name(case: dict, info: Any, variant: str) -> str | None:
    places = [(k, v) for k, v in info.items()] if isinstance(info, dict) else []
    places += [(k[len(variant) + 1:], v) for k, v in case.items() if str(k).startswith(f"{variant}_")]
    for k, v in places:
        if isinstance(v, str) and v.lower().endswith(AUDIO_SUFFIXES) and _REPLY_AUDIO_KEY.search(str(k)):
            return v
    return None


def attribute_from_filename(name: str, topic: str | None = None) -> str | None:
    """`id_{case}_{attribute}_{topic}_{variant}.wav` -> attribute (topics contain underscores, attributes spaces)."""
    stem = Path(name).stem
    m = re.match(r"^id_[^_]+_(.+?)_(target|neutral|alternative|alter|alt)$", stem)
    if not m:
        return None
    body = m.group(1)
    if topic:
        for t in {topic, topic.replace(" ", "_")}:
            if body.endswith("_" + t):
                return body[: -len(t) - 1] or None
    return body.split("_", 1)[0] or None


def _attribute_from_info(info: Any) -> str | None:
    """A label written in the info dict itself (key names vary: *attribute*, *label*, *emotion*...)."""
    if not isinstance(info, dict):
        return None
    for k, v in info.items():
        if isinstance(v, str) and re.search(r"attr|label|emotion|style|sound|trait|condition", str(k), re.I):
            if not v.lower().endswith(AUDIO_SUFFIXES):
                return v
    return None


def _case_attribute(case: dict, variant: str) -> str | None:
    """A label on the case itself: `{variant}_attribute` / `{variant}_label`, or plain `attribute` for the target."""
    keys = (f"{variant}_attribute", f"{variant}_label") + (("attribute", "label") if variant == "target" else ())
    value = _first(case, keys)
    return value if isinstance(value, str) else None


def _first(d: dict, keys: tuple[str, ...]) -> Any:
    for k in keys:
        if isinstance(d, dict) and d.get(k) not in (None, ""):
            return d[k]
    return None


def _text(value: Any) -> str:
    if isinstance(value, dict):
        value = _first(value, ("text", "script", "content", "utterance")) or ""
    return str(value or "").strip()


def _read_json(path: Path) -> Any:
    """A JSON file of the release, bounded (safejson): too deep or too large is a ValueError naming the file."""
    return safejson.loads(path.read_text(encoding="utf-8"), max_bytes=MAX_JSON_BYTES, what="the file")   # callers name the file


# ---------------------------------------------------------------- subsets
def _cases(doc: Any) -> list[dict]:
    if isinstance(doc, dict):
        for k in ("cases", "data", "items", "scripts"):
            if isinstance(doc.get(k), list):
                return doc[k]
        return [dict(v, case_id=v.get("case_id", k)) for k, v in doc.items() if isinstance(v, dict)]
    return doc if isinstance(doc, list) else []


def _load_scripts(folder: Path, index: AudioIndex, prefix: str, b: Benchmark, audio_map: dict[str, tuple]) -> None:
    seen = {s.id for s in b.scripts}
    for info_file in sorted(folder.glob("script_info_*.json")):
        dim = info_file.stem.removeprefix("script_info_")
        try:
            cases = _cases(_read_json(info_file))
        except (OSError, ValueError) as exc:
            raise ValueError(f"{info_file}: not readable JSON ({exc})") from None
        for n, case in enumerate(cases):
            if not isinstance(case, dict):
                continue
            sid = f"{prefix}{case.get('case_id', case.get('id', f'{dim}-{n}'))}"
            if sid in seen:
                sid = f"{sid}-{dim}"
            seen.add(sid)
            topic = str(case.get("topic") or "")
            flags: list[str] = []
            variants: dict[str, Variant] = {}
            attrs: dict[str, str | None] = {}
            for vname in VARIANTS:
                info = case.get(f"{vname}_audio_info")
                fname = _audio_file_name(info)
                if not fname:
                    continue
                raw_attr = (_attribute_from_info(info) or _case_attribute(case, vname)
                            or attribute_from_filename(fname, topic))
                attrs[vname] = normalise_attribute(raw_attr) if raw_attr else None
                path = index.resolve(fname)
                ref = audio_ref_from_file(path, f"{vname} audio") if path else \
                    AudioRef(None, None, f"{vname} audio: file not found: {fname}")
                flag_bad(flags, ref)
                reply = (_first(info, REPLY_KEYS) if isinstance(info, dict) else None) or \
                    _first(case, tuple(f"{vname}_{k}" for k in REPLY_KEYS))
                if isinstance(reply, str) and reply.strip().lower().endswith(AUDIO_SUFFIXES):
                    reply = None          # a path: the spoken reference reply, read below, not its words
                spoken = None
                ref_name = _reference_audio_name(case, info, vname)
                if ref_name:
                    ref_path = index.resolve(ref_name)
                    spoken = audio_ref_from_file(ref_path, f"{vname} reference reply audio") if ref_path else \
                        AudioRef(None, None, f"{vname} reference reply audio: file not found: {ref_name}")
                    flag_bad(flags, spoken)
                variants[vname] = Variant(vname, "", ref, str(reply) if reply is not None else None, spoken)
                audio_map.setdefault(Path(fname).name, (sid, vname))
            target = attrs.get("target")
            if target is None and _case_attribute(case, "target"):
                target = normalise_attribute(_case_attribute(case, "target"))
            if target is None:
                flags.append("attribute: not given and not in the target file name")
            for vname, v in variants.items():
                v.attribute = NEUTRAL if vname == "neutral" else (attrs.get(vname) or (target if vname == "target" else "unknown"))
            b.scripts.append(Script(sid, _text(case.get("spoken_info")), target or "unknown", topic, variants, flags))


def _load_mcqs(folder: Path, index: AudioIndex, prefix: str, b: Benchmark, audio_map: dict[str, tuple]) -> None:
    seen = {m.id for m in b.mcqs}
    mcq_dir = next((d for d in (folder / "MCQ", folder / "mcq") if d.is_dir()), None)
    if mcq_dir is None:
        return
    for level in ("understanding", "reasoning"):
        path = mcq_dir / f"{level}.json"
        if not path.is_file():
            continue
        try:
            doc = _read_json(path)
        except (OSError, ValueError) as exc:
            raise ValueError(f"{path}: not readable JSON ({exc})") from None
        for n, q in enumerate(_cases(doc)):
            if not isinstance(q, dict):
                continue
            qid = f"{prefix}{q.get('question_id', q.get('id', f'{level}-{n}'))}"
            if qid in seen:
                qid = f"{qid}-{level}"
            seen.add(qid)
            flags: list[str] = []
            try:
                options = parse_options(_first(q, ("options_text", "options", "choices")))
            except ValueError as exc:
                options = []
                flags.append(f"options: {exc}")
            answer = ""
            if options:
                try:
                    answer = parse_answer(_first(q, ANSWER_KEYS), options)
                except ValueError as exc:
                    flags.append(f"answer: {exc}")
            name = q.get("audio_name") or q.get("audio") or q.get("audio_path")
            path_found = index.resolve(q.get("audio_dir"), name) if name else None
            if path_found is None and name:
                path_found = index.resolve(name)
            if path_found:
                ref = audio_ref_from_file(path_found, "audio")
            else:
                where = "/".join(str(p) for p in (q.get("audio_dir"), name) if p)
                ref = AudioRef(None, None, f"audio: file not found: {where}" if name else "audio: no audio named")
            flag_bad(flags, ref)
            script_id, variant = audio_map.get(Path(str(name)).name, (None, None)) if name else (None, None)
            qtype = str(_first(q, TYPE_KEYS) or "unspecified")
            b.mcqs.append(MCQ(qid, level, qtype, ref, str(q.get("question") or ""), options, answer,
                              script_id, variant, flags))


def find_subsets(root: Path) -> list[Path]:
    """Folders that hold script_info_*.json or MCQ/ (the root itself, or data_* below it)."""
    def is_subset(d: Path) -> bool:
        return any(d.glob("script_info_*.json")) or (d / "MCQ").is_dir() or (d / "mcq").is_dir()

    if is_subset(root):
        return [root]
    return sorted(d for d in root.iterdir() if d.is_dir() and is_subset(d))


def load_echomind(path: str | Path) -> Benchmark:
    """All subsets found under `path`; ids get the subset's name as prefix when there are several."""
    root = Path(path).expanduser()
    if not root.is_dir():
        raise ValueError(f"echomind: {root} is not a folder")
    subsets = find_subsets(root)
    if not subsets:
        raise ValueError(f"echomind: no script_info_*.json or MCQ/ found in {root} or its subfolders")
    b = Benchmark(name="echomind", version="local", source=f"echomind:{root}")
    for sub in subsets:
        prefix = f"{sub.name}-" if len(subsets) > 1 else ""
        index = AudioIndex(sub)
        audio_map: dict[str, tuple] = {}
        _load_scripts(sub, index, prefix, b, audio_map)
        _load_mcqs(sub, index, prefix, b, audio_map)
    content_hash(b)
    return b
