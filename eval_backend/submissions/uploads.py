"""Checks of a predictions upload (a zip) before it is accepted.

The zip holds exactly one predictions JSONL (format: eval_backend/clients/predictions.py) and the
wav files its lines name, at any folder depth. It is refused, with one plain-words reason, when:
- it is larger than `max_upload_bytes`, holds more than `max_files` entries, unpacks to more
  than `max_unpacked_bytes`, or one entry to more than `max_audio_bytes` / `max_jsonl_bytes`
  (counted while inflating, so a lying header cannot pass: zip bombs; memory stays bounded by
  one entry);
- an entry name is absolute, has `..`, a backslash, a drive letter or a control character, repeats
  another entry, or is a symlink or other special file;
- an entry is neither the JSONL nor a .wav (nor a folder), is encrypted, or is compressed with
  anything but deflate;
- the JSONL is not a valid predictions file, names an absolute or escaping audio path, or an audio
  file that is not in the zip; no line matches a benchmark request;
- any wav does not decode, is truncated or is too short.
Nothing is kept from a refused upload. An accepted one is unpacked into the folder given, and its
content hash (sha256 over sorted entry names and contents, independent of zip compression and
order) is what the duplicate check compares.
"""
from __future__ import annotations

import hashlib
import json
import lzma
import posixpath
import shutil
import stat
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from ..audio.io import BadAudio, decode_wav_bytes
from ..clients.openai_chat import check_wav_complete
from ..clients.predictions import PredictionsError, parse_lines
from .settings import SubmissionSettings

CHUNK = 1 << 16


class UploadError(ValueError):
    """The upload is refused; the message says why in plain words."""


@dataclass
class AcceptedUpload:
    jsonl: Path                      # the unpacked predictions JSONL
    audio_dir: Path                  # the folder its audio paths are relative to
    content_hash: str
    lines: int
    matched: int                     # lines whose id is a request of the benchmark
    unknown_ids: list[str] = field(default_factory=list)
    files: int = 0
    unpacked_bytes: int = 0


def _bad_name(name: str) -> str | None:
    if not name or len(name) > 512:
        return "an empty or overlong name"
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        return "a control character"
    if "\\" in name:
        return "a backslash"
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        return "an absolute path"
    if any(part == ".." for part in name.split("/")):
        return "'..' (a path outside the upload)"
    return None


def _is_link_or_special(info: zipfile.ZipInfo) -> bool:
    mode = info.external_attr >> 16
    if info.create_system == 3 and mode:          # made on Unix: the mode is meaningful
        kind = stat.S_IFMT(mode)
        return kind not in (0, stat.S_IFREG, stat.S_IFDIR)
    return False


def _audio_rel(jsonl_dir: str, audio: str) -> str:
    """The zip entry a line's `audio` names; raises UploadError for absolute or escaping paths."""
    reason = _bad_name(audio)
    if reason or audio.startswith("~"):
        raise UploadError(f"a predictions line names the audio file {audio[:80]!r}, which has "
                          f"{reason or 'a home-folder path'}; use a path inside the zip")
    return posixpath.normpath(posixpath.join(jsonl_dir, audio)) if jsonl_dir else posixpath.normpath(audio)


def _read_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, budget: list[int], limit: int,
                 file_limit: int) -> bytes:
    """The entry's bytes, counted as they are inflated: a header that lies about sizes cannot pass."""
    out = bytearray()
    with zf.open(info) as f:
        while True:
            chunk = f.read(CHUNK)
            if not chunk:
                break
            out += chunk
            budget[0] += len(chunk)
            if budget[0] > limit:
                raise UploadError(f"the upload unpacks to more than {limit // 2**20} MB")
            if len(out) > file_limit:
                raise UploadError(f"the entry {info.orig_filename[:80]!r} is larger than {file_limit // 2**20} MB")
    return bytes(out)


def check_upload(zip_path: str | Path, dest: str | Path, settings: SubmissionSettings,
                 request_ids: set[str] | None = None) -> AcceptedUpload:
    """Check the zip and unpack it into `dest` (which must not exist yet). Raises UploadError.

    `request_ids`: the benchmark's request ids; at least one line must match one of them.
    """
    zip_path, dest = Path(zip_path), Path(dest)
    try:
        size = zip_path.stat().st_size
    except OSError as exc:
        raise UploadError(f"the upload cannot be read: {exc.strerror or exc}") from None
    if size > settings.max_upload_bytes:
        raise UploadError(f"the upload is {size / 2**20:.1f} MB; the limit is {settings.max_upload_bytes // 2**20} MB")
    if dest.exists():
        raise UploadError("internal: the destination folder exists already")
    try:
        return _check(zip_path, dest, settings, request_ids)
    except UploadError:
        shutil.rmtree(dest, ignore_errors=True)
        raise
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, NotImplementedError, RuntimeError,
            OSError, ValueError, zlib.error, lzma.LZMAError) as exc:   # corrupt archives raise a zoo of types
        shutil.rmtree(dest, ignore_errors=True)
        raise UploadError(f"the upload is not a readable zip file ({type(exc).__name__}: {str(exc)[:200]})") from None


def _check(zip_path: Path, dest: Path, settings: SubmissionSettings,
           request_ids: set[str] | None) -> AcceptedUpload:
    with zipfile.ZipFile(zip_path) as zf:
        infos = zf.infolist()
        if len(infos) > settings.max_files:
            raise UploadError(f"the upload has {len(infos)} entries; the limit is {settings.max_files}")
        big = next((i for i in infos if i.file_size > max(settings.max_audio_bytes, settings.max_jsonl_bytes)), None)
        if big is not None:
            raise UploadError(f"the entry {big.orig_filename[:80]!r} is larger than "
                              f"{max(settings.max_audio_bytes, settings.max_jsonl_bytes) // 2**20} MB")
        declared = sum(i.file_size for i in infos)
        if declared > settings.max_unpacked_bytes:
            raise UploadError(f"the upload unpacks to {declared / 2**20:.0f} MB; "
                              f"the limit is {settings.max_unpacked_bytes // 2**20} MB")
        files: dict[str, zipfile.ZipInfo] = {}
        for info in infos:
            name = info.orig_filename
            reason = _bad_name(name)
            if reason:
                raise UploadError(f"the entry {name[:80]!r} has {reason}")
            if _is_link_or_special(info):
                raise UploadError(f"the entry {name[:80]!r} is a symbolic link or special file")
            if info.flag_bits & 0x1:
                raise UploadError(f"the entry {name[:80]!r} is encrypted")
            if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
                raise UploadError(f"the entry {name[:80]!r} uses a compression other than deflate or none")
            if info.is_dir():
                continue
            norm = posixpath.normpath(name)
            if norm in files or norm.lower() in {k.lower() for k in files}:
                raise UploadError(f"the entry {name[:80]!r} appears twice")
            low = norm.lower()
            if not (low.endswith(".jsonl") or low.endswith(".wav")):
                raise UploadError(f"the entry {name[:80]!r} is neither the predictions .jsonl nor a .wav file")
            files[norm] = info
        jsonls = [n for n in files if n.lower().endswith(".jsonl")]
        if len(jsonls) != 1:
            raise UploadError(f"the upload must hold exactly one .jsonl file; it holds {len(jsonls)}")
        jsonl_name = jsonls[0]
        budget = [0]
        jinfo = files[jsonl_name]
        if jinfo.file_size > settings.max_jsonl_bytes:
            raise UploadError(f"the predictions file is larger than {settings.max_jsonl_bytes // 2**20} MB")
        raw = _read_member(zf, jinfo, budget, settings.max_unpacked_bytes, settings.max_jsonl_bytes)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise UploadError("the predictions file is not UTF-8 text") from None
        try:
            lines = parse_lines(text)
        except PredictionsError as exc:
            raise UploadError(f"the predictions file is not valid: {str(exc)[:1500]}") from None
        if not lines:
            raise UploadError("the predictions file has no lines")
        jdir = posixpath.dirname(jsonl_name)
        needed: set[str] = set()
        for rid, (n, obj) in lines.items():
            if obj.get("audio"):
                rel = _audio_rel(jdir, obj["audio"])
                if rel not in files:
                    raise UploadError(f"line {n} names the audio file {obj['audio'][:80]!r}, which is not in the zip")
                needed.add(rel)
        matched = [rid for rid in lines if request_ids is None or rid in request_ids]
        if not matched:
            raise UploadError("no line of the predictions file matches a request of the benchmark "
                              "(see `python -m eval_backend benchmark info` for the ids)")

        digest = hashlib.sha256()
        dest.mkdir(parents=True)
        contents = {jsonl_name: raw}
        for name in sorted(files):
            data = contents.get(name)
            if data is None:
                data = _read_member(zf, files[name], budget, settings.max_unpacked_bytes, settings.max_audio_bytes)
                if name.lower().endswith(".wav"):
                    try:
                        decode_wav_bytes(data)
                        check_wav_complete(data)
                    except BadAudio as exc:
                        raise UploadError(f"the audio file {name[:80]!r} does not decode: {exc}") from None
            digest.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
            target = dest / name
            if dest.resolve() not in target.resolve().parents:   # belt and braces after the name checks
                raise UploadError(f"the entry {name[:80]!r} would land outside the upload folder")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
    unknown = [rid for rid in lines if request_ids is not None and rid not in request_ids]
    return AcceptedUpload(jsonl=dest / jsonl_name, audio_dir=(dest / jdir) if jdir else dest,
                          content_hash=digest.hexdigest(), lines=len(lines), matched=len(matched),
                          unknown_ids=unknown, files=len(files), unpacked_bytes=budget[0])


def describe(upload: AcceptedUpload) -> str:
    return json.dumps({"lines": upload.lines, "matched": upload.matched, "files": upload.files,
                       "unknown_ids": upload.unknown_ids[:20]})
