"""The project's stored benchmark format, and its content hash.

A benchmark folder holds:
    benchmark.json   {name, version, hash, created_with, format}
    hf/              a `datasets.DatasetDict` (save_to_disk), one split per collection:
                     scripts, mcq, context_groups, tone_groups, selection
    audio_cache/     <sha256>.wav files materialised on load (derived, regenerable)

Audio columns use `datasets.Audio(decode=False)`: datasets >= 4 decodes (and even
encodes) audio through torchcodec, which needs ffmpeg, so we build the Arrow table
ourselves and decode bytes with soundfile (eval_backend/audio/io.py).

A clip that is missing or does not decode keeps its place: its AudioRef carries
`error` and its item gets a flag. Nothing here raises for bad audio.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import re
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .. import safejson
from ..audio.io import BadAudio, decode_wav_bytes, sha256_bytes
from .model import (
    MCQ,
    AudioRef,
    Benchmark,
    ContextCase,
    ContextGroup,
    Script,
    SelectionItem,
    ToneCase,
    ToneGroup,
    Variant,
)

FORMAT = "empathy-arena-benchmark/1"
SPLITS = ("scripts", "mcq", "context_groups", "tone_groups", "selection")
META_FILE = "benchmark.json"
HF_DIR = "hf"
CACHE_DIR = "audio_cache"
MAX_JSON_BYTES = 256 * 2 ** 20    # one JSON file of a foreign release (echomind:, empathyeval:); depth: safejson's
log = logging.getLogger(__name__)


# ---------------------------------------------------------------- audio refs
def check_audio_bytes(data: bytes) -> str | None:
    """None when the bytes decode as usable audio, else the reason."""
    try:
        decode_wav_bytes(data)
    except BadAudio as exc:
        # soundfile names the in-memory buffer by its address: drop it so reasons are stable and readable.
        return re.sub(r"Error opening <[^>]*>: ?", "", str(exc))
    return None


def audio_ref_from_file(path: str | os.PathLike | None, label: str = "audio") -> AudioRef:
    """An AudioRef for a local file, validated; a missing/corrupt file gives `error`, never an exception."""
    if path is None:
        return AudioRef(None, None, f"{label}: no audio file named")
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as exc:
        return AudioRef(str(p), None, f"{label}: cannot read {p.name}: {exc.strerror or exc}")
    err = check_audio_bytes(data)
    return AudioRef(str(p), sha256_bytes(data), f"{label}: {p.name}: {err}" if err else None)


def flag_bad(flags: list[str], *refs: AudioRef) -> list[str]:
    """Add each broken clip's reason to an item's flags (once)."""
    for ref in refs:
        if ref.error and ref.error not in flags:
            flags.append(ref.error)
    return flags


def complete_audio(b: Benchmark) -> Benchmark:
    """Fill sha256 (and validate) for refs built with a path only, flagging their items; in place."""
    def fix(ref: AudioRef, flags: list[str]) -> AudioRef:
        if ref.sha256 is None and ref.error is None and ref.path:
            ref = audio_ref_from_file(ref.path)
            flag_bad(flags, ref)
        return ref

    for s in b.scripts:
        for v in s.variants.values():
            v.audio = fix(v.audio, s.flags)
            if v.reference_audio is not None:
                v.reference_audio = fix(v.reference_audio, s.flags)
    for item in (*b.mcqs, *b.context_groups):
        item.audio = fix(item.audio, item.flags)
    for g in b.tone_groups:
        for c in g.cases:
            c.audio = fix(c.audio, g.flags)
    for it in b.selection:
        it.audio = fix(it.audio, it.flags)
        it.options = {k: fix(v, it.flags) for k, v in it.options.items()}
    return b


# ---------------------------------------------------------------- content hash
def _audio_key(ref: AudioRef) -> str | None:
    return ref.sha256


def _variant_canonical(v: Variant) -> dict:
    out = {"attribute": v.attribute, "audio": _audio_key(v.audio), "reference_reply": v.reference_reply}
    if v.reference_audio is not None:      # only when present: benchmarks without it keep their hash
        out["reference_audio"] = _audio_key(v.reference_audio)
    return out


def _canonical(b: Benchmark) -> dict:
    """Everything that defines the benchmark's content; audio by sha256, no paths, no flags."""
    return {
        "scripts": [
            {"id": s.id, "text": s.text, "attribute": s.attribute, "topic": s.topic,
             "variants": {k: _variant_canonical(v) for k, v in sorted(s.variants.items())}}
            for s in b.scripts],
        "mcq": [
            {"id": m.id, "level": m.level, "type": m.type, "audio": _audio_key(m.audio), "question": m.question,
             "options": list(m.options), "answer": m.answer, "script_id": m.script_id, "variant": m.variant}
            for m in b.mcqs],
        "context_groups": [
            {"id": g.id, "utterance_text": g.utterance_text, "audio": _audio_key(g.audio), "attribute": g.attribute,
             "cases": [{"id": c.id, "context": c.context, "reference_reply": c.reference_reply} for c in g.cases]}
            for g in b.context_groups],
        "tone_groups": [
            {"id": g.id, "text": g.text, "context": g.context,
             "cases": [{"id": c.id, "tone": c.tone, "audio": _audio_key(c.audio),
                        "reference_reply": c.reference_reply} for c in g.cases]}
            for g in b.tone_groups],
        "selection": [
            {"id": it.id, "group_id": it.group_id, "kind": it.kind, "context": it.context,
             "utterance_text": it.utterance_text, "audio": _audio_key(it.audio), "answer": it.answer,
             "options": {k: _audio_key(v) for k, v in sorted(it.options.items())},
             "option_texts": dict(sorted(it.option_texts.items())), "attribute": it.attribute}
            for it in b.selection],
    }


def content_hash(b: Benchmark) -> str:
    """sha256 of a canonical JSON of all items; stable across save/load. Also fills b.hash."""
    blob = json.dumps(_canonical(b), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    b.hash = hashlib.sha256(blob.encode("utf-8")).hexdigest()
    return b.hash


# ---------------------------------------------------------------- schema
def _features():
    from datasets import Audio, Features, List, Value

    s = Value("string")
    # audio_file: the clip's path relative to the benchmark folder (datasets keeps only a basename in `audio`).
    audio = {"audio": Audio(decode=False), "audio_file": s, "audio_error": s}
    # a variant's reference reply, spoken (optional: null cells when the benchmark has none)
    ref_audio = {"reference_audio": Audio(decode=False), "reference_audio_file": s, "reference_audio_error": s}
    return {
        "scripts": Features({
            "id": s, "text": s, "attribute": s, "topic": s, "flags": List(s),
            "variants": List({"name": s, "attribute": s, "reference_reply": s, **audio, **ref_audio}),
        }),
        "mcq": Features({
            "id": s, "level": s, "type": s, "question": s, "options": List(s), "answer": s,
            "script_id": s, "variant": s, "flags": List(s), **audio,
        }),
        "context_groups": Features({
            "id": s, "utterance_text": s, "attribute": s, "flags": List(s),
            "cases": List({"id": s, "context": s, "reference_reply": s}), **audio,
        }),
        "tone_groups": Features({
            "id": s, "text": s, "context": s, "flags": List(s),
            "cases": List({"id": s, "tone": s, "reference_reply": s, **audio}),
        }),
        "selection": Features({
            "id": s, "group_id": s, "kind": s, "context": s, "utterance_text": s, "attribute": s,
            "answer": s, "flags": List(s),
            "options": List({"letter": s, "text": s, **audio}), **audio,
        }),
    }


def _audio_cell(ref: AudioRef, root: Path | None) -> dict:
    """{"audio": {bytes, path}, "audio_error"}; path is kept relative to `root` when the file lies inside it."""
    data = None
    name = None
    if ref.path:
        p = Path(ref.path)
        name = p.name
        if root is not None:
            try:
                name = p.resolve().relative_to(root.resolve()).as_posix()
            except ValueError:
                pass
        try:
            data = p.read_bytes()
        except OSError:
            data = None
        if data is not None and ref.sha256 and sha256_bytes(data) != ref.sha256:
            data = None  # changed on disk since it was loaded: keep nothing rather than other bytes
    error = ref.error
    if data is None and error is None:
        error = f"audio: {name or 'unnamed clip'}: file unavailable when the benchmark was saved"
    # No bytes -> a null cell: save_to_disk would otherwise try to embed the (missing) file by its path.
    cell = {"bytes": data, "path": Path(name).name} if data is not None else None
    return {"audio": cell, "audio_file": name, "audio_error": error}


def _reference_cells(ref: AudioRef | None, root: Path | None) -> dict:
    """The reference reply's audio cell under its own keys; all null when the variant has none."""
    if ref is None:
        return {"reference_audio": None, "reference_audio_file": None, "reference_audio_error": None}
    return {f"reference_{k}": v for k, v in _audio_cell(ref, root).items()}


def _rows(b: Benchmark, root: Path | None) -> dict[str, list[dict]]:
    a = lambda ref: _audio_cell(ref, root)  # noqa: E731
    return {
        "scripts": [
            {"id": s.id, "text": s.text, "attribute": s.attribute, "topic": s.topic, "flags": list(s.flags),
             "variants": [{"name": k, "attribute": v.attribute, "reference_reply": v.reference_reply, **a(v.audio),
                           **_reference_cells(v.reference_audio, root)}
                          for k, v in s.variants.items()]}
            for s in b.scripts],
        "mcq": [
            {"id": m.id, "level": m.level, "type": m.type, "question": m.question, "options": list(m.options),
             "answer": m.answer, "script_id": m.script_id, "variant": m.variant, "flags": list(m.flags),
             **a(m.audio)}
            for m in b.mcqs],
        "context_groups": [
            {"id": g.id, "utterance_text": g.utterance_text, "attribute": g.attribute, "flags": list(g.flags),
             "cases": [{"id": c.id, "context": c.context, "reference_reply": c.reference_reply} for c in g.cases],
             **a(g.audio)}
            for g in b.context_groups],
        "tone_groups": [
            {"id": g.id, "text": g.text, "context": g.context, "flags": list(g.flags),
             "cases": [{"id": c.id, "tone": c.tone, "reference_reply": c.reference_reply, **a(c.audio)}
                       for c in g.cases]}
            for g in b.tone_groups],
        "selection": [
            {"id": it.id, "group_id": it.group_id, "kind": it.kind, "context": it.context,
             "utterance_text": it.utterance_text, "attribute": it.attribute, "answer": it.answer,
             "flags": list(it.flags),
             "options": [{"letter": k, "text": it.option_texts.get(k), **a(v)} for k, v in sorted(it.options.items())],
             **a(it.audio)}
            for it in b.selection],
    }


def to_dataset_dict(b: Benchmark, root: str | os.PathLike | None = None):
    """The benchmark as a DatasetDict (audio bytes embedded). Built from Arrow directly: no torchcodec needed."""
    import pyarrow as pa
    from datasets import Dataset, DatasetDict, DatasetInfo

    feats = _features()
    rows = _rows(b, Path(root) if root else None)
    out = {}
    for split in SPLITS:
        table = pa.Table.from_pylist(rows[split], schema=feats[split].arrow_schema)
        out[split] = Dataset(table, info=DatasetInfo(features=feats[split]))
    return DatasetDict(out)


# ---------------------------------------------------------------- reading back
class _AudioMaterialiser:
    """Turns stored {bytes, path} cells into local files: the original when it is still there
    with the same content, else audio_cache/<sha256>.wav."""

    def __init__(self, audio_dir: Path, root: Path | None):
        self.audio_dir = audio_dir
        self.root = root

    def __call__(self, row: dict) -> AudioRef:
        cell = row.get("audio") or {}
        stored_error = row.get("audio_error")
        data, name = cell.get("bytes"), row.get("audio_file") or cell.get("path")
        if not data:
            return AudioRef(None, None, stored_error or f"audio: {name or 'unnamed clip'}: no bytes stored")
        sha = sha256_bytes(data)
        error = stored_error
        if error is None:
            bad = check_audio_bytes(data)
            error = f"audio: {name}: {bad}" if bad else None
        return AudioRef(str(self._local_file(data, sha, name)), sha, error)

    def _local_file(self, data: bytes, sha: str, name: str | None) -> Path:
        if self.root is not None and name and not Path(name).is_absolute():
            original = self.root / name
            if original.is_file() and original.stat().st_size == len(data) and sha256_bytes(original.read_bytes()) == sha:
                return original
        try:
            return _write_once(self.audio_dir, sha, data)
        except OSError:  # a read-only benchmark folder: the system's temp dir still works
            import tempfile
            return _write_once(Path(tempfile.gettempdir()) / "empathy-arena-audio", sha, data)


def _write_once(directory: Path, sha: str, data: bytes) -> Path:
    target = directory / f"{sha}.wav"
    if not (target.is_file() and target.stat().st_size == len(data)):
        directory.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(f".tmp{os.getpid()}")
        tmp.write_bytes(data)
        os.replace(tmp, target)  # atomic: a concurrent reader never sees half a file
    return target


def _split_rows(dd, split: str) -> list[dict[str, Any]]:
    """Rows as plain Python, without letting datasets decode audio (whatever the stored feature says).
    `dd` is a DatasetDict or a plain {split: pyarrow.Table} mapping (parquet read directly)."""
    if split not in dd:
        return []
    table = dd[split]
    if hasattr(table, "with_format"):
        table = table.with_format("arrow")[:]
    return table.to_pylist()


def parquet_splits(folder: str | os.PathLike) -> dict[str, Any]:
    """{split: pyarrow.Table} from parquet files whose path names a split: data/scripts-00000-of-00001.parquet
    (push_to_hub of the DatasetDict) or scripts/train-*.parquet (one config per collection)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = Path(folder)
    found: dict[str, list] = {}
    for f in sorted(folder.rglob("*.parquet")):
        parts = f.relative_to(folder).as_posix().replace("-", "/").split("/")
        split = next((p for p in parts if p in SPLITS), None)
        if split:
            found.setdefault(split, []).append(pq.read_table(f))
    return {k: pa.concat_tables(v) for k, v in found.items()}


def from_dataset_dict(dd, audio_dir: str | os.PathLike, root: str | os.PathLike | None = None,
                      name: str = "benchmark", version: str = "") -> Benchmark:
    """A Benchmark from a DatasetDict in the project schema; audio goes to files under `audio_dir`."""
    mat = _AudioMaterialiser(Path(audio_dir), Path(root) if root else None)
    b = Benchmark(name=name, version=version)
    for r in _split_rows(dd, "scripts"):
        variants = {}
        flags = list(r.get("flags") or [])
        for v in r.get("variants") or []:
            ref = mat(v)
            spoken = None
            if v.get("reference_audio") or v.get("reference_audio_error"):
                spoken = mat({"audio": v.get("reference_audio"), "audio_file": v.get("reference_audio_file"),
                              "audio_error": v.get("reference_audio_error")})
                flag_bad(flags, spoken)
            variants[v["name"]] = Variant(v["name"], v.get("attribute") or "", ref, v.get("reference_reply"), spoken)
            flag_bad(flags, ref)
        b.scripts.append(Script(r["id"], r.get("text") or "", r.get("attribute") or "", r.get("topic") or "",
                                variants, flags))
    for r in _split_rows(dd, "mcq"):
        ref = mat(r)
        b.mcqs.append(MCQ(r["id"], r.get("level") or "", r.get("type") or "", ref, r.get("question") or "",
                          list(r.get("options") or []), r.get("answer") or "", r.get("script_id"), r.get("variant"),
                          flag_bad(list(r.get("flags") or []), ref)))
    for r in _split_rows(dd, "context_groups"):
        ref = mat(r)
        cases = [ContextCase(c["id"], c.get("context") or "", c.get("reference_reply")) for c in r.get("cases") or []]
        b.context_groups.append(ContextGroup(r["id"], r.get("utterance_text") or "", ref, cases, r.get("attribute"),
                                             flag_bad(list(r.get("flags") or []), ref)))
    for r in _split_rows(dd, "tone_groups"):
        flags = list(r.get("flags") or [])
        cases = []
        for c in r.get("cases") or []:
            ref = mat(c)
            cases.append(ToneCase(c["id"], c.get("tone") or "", ref, c.get("reference_reply")))
            flag_bad(flags, ref)
        b.tone_groups.append(ToneGroup(r["id"], r.get("text") or "", r.get("context") or "", cases, flags))
    for r in _split_rows(dd, "selection"):
        ref = mat(r)
        flags = flag_bad(list(r.get("flags") or []), ref)
        options, texts = {}, {}
        for o in r.get("options") or []:
            options[o["letter"]] = mat(o)
            if o.get("text") is not None:
                texts[o["letter"]] = o["text"]
            flag_bad(flags, options[o["letter"]])
        b.selection.append(SelectionItem(r["id"], r.get("group_id") or "", r.get("kind") or "", r.get("context") or "",
                                         r.get("utterance_text"), ref, options, r.get("answer") or "", texts,
                                         r.get("attribute"), flags))
    content_hash(b)
    return b


# ---------------------------------------------------------------- folders
@contextmanager
def _quiet(datasets):
    """No progress bars on stderr for these small writes; the caller's setting is restored."""
    was_off = datasets.are_progress_bars_disabled()
    datasets.disable_progress_bars()
    try:
        yield
    finally:
        if not was_off:
            datasets.enable_progress_bars()


def is_project_folder(folder: str | os.PathLike) -> bool:
    f = Path(folder)
    return (f / META_FILE).is_file() and (f / HF_DIR).is_dir()


def save_benchmark(b: Benchmark, folder: str | os.PathLike) -> Path:
    """Write `folder/benchmark.json` + `folder/hf/`; returns the folder. Fills b.hash."""
    import datasets

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    complete_audio(b)
    content_hash(b)
    dd = to_dataset_dict(b, root=folder)
    hf = folder / HF_DIR
    tmp = folder / f".{HF_DIR}.tmp{os.getpid()}"
    # An empty split needs one explicit (empty) shard, or datasets writes none and cannot read it back.
    with _quiet(datasets):
        dd.save_to_disk(str(tmp), num_shards={k: 1 for k, v in dd.items() if len(v) == 0} or None)
    if hf.exists():
        import shutil
        shutil.rmtree(hf)
    os.replace(tmp, hf)
    meta = {"name": b.name, "version": b.version, "hash": b.hash, "format": FORMAT,
            "created_with": f"eval_backend ({FORMAT}; datasets {datasets.__version__})"}
    (folder / META_FILE).write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n")
    return folder


def load_project_folder(folder: str | os.PathLike) -> Benchmark:
    """Read a folder written by save_benchmark; audio lands under folder/audio_cache/ unless the originals remain."""
    from datasets import load_from_disk

    folder = Path(folder)
    meta_path = folder / META_FILE
    try:
        meta = safejson.loads(meta_path.read_text(), max_bytes=MAX_JSON_BYTES, what="the file")
    except (OSError, ValueError) as exc:     # JSONDecodeError, JSONLimitError (too deep, too large)
        raise ValueError(f"{meta_path}: not a readable benchmark.json ({exc})") from None
    if not isinstance(meta, dict) or not (folder / HF_DIR).is_dir():
        raise ValueError(f"{folder}: not a benchmark folder (needs benchmark.json and hf/)")
    dd = load_from_disk(str(folder / HF_DIR))
    b = from_dataset_dict(dd, folder / CACHE_DIR, root=folder, name=str(meta.get("name") or folder.name),
                          version=str(meta.get("version") or ""))
    if meta.get("hash") and meta["hash"] != b.hash:  # edited by hand or written by another format version
        log.warning("%s: stored hash %s differs from the content's %s; using the content's",
                    folder, meta["hash"][:12], b.hash[:12])
    b.source = str(folder)
    return b
