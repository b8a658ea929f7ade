"""Vote files: parse imports (CSV / JSONL) and format exports. Pure text in, rows out.

Import columns: model_a, model_b, winner (model_a's name, model_b's name, 'tie'
or 'both_bad'); optional timestamp, created_at_unix or created_at (epoch seconds or ISO 8601, the first given),
said, sounded (A | B | tie), first_heard (A | B), attribute (the vocal state of the user's utterance: one of
the benchmark's 45 labels, or neutral), dimension, reason, request_id, benchmark_hash, the style covariates
as a_*/b_* pairs (arena/core/covariates.py: a_duration_s, b_duration_s, a_loudness_lufs, b_loudness_lufs,
a_speech_rate, b_speech_rate, a_words, b_words, a_latency_s, b_latency_s; numbers, empty when not measured)
and weight (0 to 1, default 1: how much the vote counts). Other columns (an export's id, slot, source) are
ignored, so an export re-imports as is. Every bad row is reported with its line
number and nothing is returned unless all rows are good. Text may hold any Unicode character except NUL
(U+0000), which the databases cannot store: a file with one is refused, naming the line.

JSONL is split on "\n" only (`jsonl_lines`): JSON escapes every control character inside strings, but not
U+2028, U+2029 or U+0085, which `str.splitlines` would take for line ends.

CSV exports are opened in spreadsheets: a text cell that would run as a formula
(it begins with =, +, -, @, tab or CR) is written with a leading single quote, and
so is one that begins with a quote; the CSV import removes exactly that quote again
(`eval_backend.inert.csv_cell` / `csv_uncell`), so an export re-imports unchanged.
"""
from __future__ import annotations

import csv
import io
import json
import math
from datetime import datetime, timezone
from typing import Iterable

from arena.core.covariates import COLUMNS as COVARIATE_COLUMNS
from arena.core.ratings import BOTH_BAD, TIE
from arena.core.vote_rows import DIMENSION_AXES, EXPORT_FIELDS, SUB_SLOTS, VoteRow
from eval_backend import safejson
from eval_backend.inert import csv_cell, csv_uncell

OPTIONAL_TEXT = ("attribute", "reason", "request_id", "benchmark_hash")
MAX_REPORTED = 50
MAX_LINE_BYTES = 64 * 1024     # one JSONL vote (a few hundred bytes); depth is safejson's limit
# The CSV (read by people, in spreadsheets) has `created_at` as ISO-8601 UTC; the exact epoch seconds ride in
# this column so an export re-imports to the very same times. The JSONL keeps epoch seconds (its sha256 stamps
# releases and snapshots).
UNIX_COLUMN = "created_at_unix"


def iso_utc(ts: float) -> str:
    """Epoch seconds as ISO-8601 UTC with milliseconds ("2026-01-01T10:00:00.000Z")."""
    return datetime.fromtimestamp(float(ts), timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class VoteImportError(ValueError):
    """The file has bad rows; `errors` lists (line, message) for every one of them."""

    def __init__(self, path: str, errors: list[tuple[int, str]]):
        self.errors = errors
        shown = "\n".join(f"  line {line}: {msg}" for line, msg in errors[:MAX_REPORTED])
        more = f"\n  ... and {len(errors) - MAX_REPORTED} more" if len(errors) > MAX_REPORTED else ""
        super().__init__(f"{path}: {len(errors)} bad row(s), nothing imported:\n{shown}{more}")


def _timestamp(value, default: float) -> float:
    if value is None or value == "":
        return default
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        ts = float(value)
    else:
        text = str(value).strip()
        try:
            ts = float(text)
        except ValueError:
            dt = datetime.fromisoformat(text.replace("Z", "+00:00"))  # ValueError on garbage
            ts = (dt if dt.tzinfo else dt.replace(tzinfo=timezone.utc)).timestamp()
    if not math.isfinite(ts) or ts < 0:
        raise ValueError(f"timestamp {value!r} is not a time")
    return ts


def jsonl_lines(text: str):
    """(line number, line) of a JSONL text, split on "\n" only (a trailing "\r" is JSON whitespace)."""
    return enumerate(text.split("\n"), start=1)


def _number(raw: dict, key: str, low: float | None = None, high: float | None = None) -> float | None:
    v = raw.get(key)
    if v is None or (isinstance(v, str) and not v.strip()):
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float, str)):
        raise ValueError(f"{key} must be a number, got {type(v).__name__}")
    try:
        x = float(v)
    except ValueError:
        raise ValueError(f"{key} {v!r} is not a number") from None
    if not math.isfinite(x) or (low is not None and x < low) or (high is not None and x > high):
        bounds = f" in [{low}, {high}]" if high is not None else f" >= {low}" if low is not None else ""
        raise ValueError(f"{key} {v!r} is not a finite number{bounds}")
    return x


def validate_row(raw: dict, default_time: float) -> dict:
    """One import record -> the vote columns, or ValueError saying what is wrong."""
    def text(key: str) -> str | None:
        v = raw.get(key)
        if v is None or (isinstance(v, str) and not v.strip()):
            return None
        if not isinstance(v, (str, int, float)) or isinstance(v, bool):
            raise ValueError(f"{key} must be text, got {type(v).__name__}")
        s = str(v).strip()
        if "\x00" in s:
            raise ValueError(f"{key} holds a NUL character (U+0000), which the database cannot store")
        if any("\ud800" <= ch <= "\udfff" for ch in s):
            raise ValueError(f"{key} holds a lone surrogate (not a Unicode character)")
        return s

    a, b, winner = text("model_a"), text("model_b"), text("winner")
    missing = [k for k, v in (("model_a", a), ("model_b", b), ("winner", winner)) if v is None]
    if missing:
        raise ValueError(f"missing {', '.join(missing)}")
    if a == b:
        raise ValueError(f"model_a and model_b are both {a!r}")
    if a in (TIE, BOTH_BAD) or b in (TIE, BOTH_BAD):
        raise ValueError("a model cannot be called 'tie' or 'both_bad'")
    if winner == a:
        slot = "A"
    elif winner == b:
        slot = "B"
    elif winner in (TIE, BOTH_BAD):
        slot = winner
    else:
        raise ValueError(f"winner {winner!r} is not {a!r}, {b!r}, 'tie' or 'both_bad'")
    row = {"model_a": a, "model_b": b, "winner": winner, "slot": slot}
    for key in ("said", "sounded"):
        v = text(key)
        if v is not None and v not in SUB_SLOTS:
            raise ValueError(f"{key} {v!r} is not A, B or tie")
        row[key] = v
    first = text("first_heard")
    if first is not None and first not in ("A", "B"):
        raise ValueError(f"first_heard {first!r} is not A or B")
    row["first_heard"] = first
    dim = text("dimension")
    if dim is not None and dim not in DIMENSION_AXES:
        raise ValueError(f"dimension {dim!r} is not one of {', '.join(DIMENSION_AXES)}")
    row["dimension"] = dim
    for key in OPTIONAL_TEXT:
        row[key] = text(key)
    for key in COVARIATE_COLUMNS:       # loudness may be any level; every other measure is a size or a time
        row[key] = _number(raw, key, None if "loudness" in key else 0.0)
    weight = _number(raw, "weight", 0.0, 1.0)
    row["weight"] = 1.0 if weight is None else weight
    try:
        given = [raw.get(k) for k in ("timestamp", UNIX_COLUMN, "created_at") if raw.get(k) not in (None, "")]
        row["created_at"] = _timestamp(given[0] if given else None, default_time)
    except ValueError as exc:
        raise ValueError(f"bad timestamp: {exc}") from None
    return row


def parse(path: str, content: str, default_time: float) -> list[dict]:
    """All rows of a CSV (by header) or JSONL file, validated; raises VoteImportError listing every bad line."""
    rows: list[dict] = []
    errors: list[tuple[int, str]] = []
    is_jsonl = path.lower().endswith((".jsonl", ".json", ".ndjson")) or content.lstrip().startswith("{")
    if is_jsonl:
        for n, line in jsonl_lines(content):
            if not line.strip():
                continue
            try:
                obj = safejson.loads(line, max_bytes=MAX_LINE_BYTES, what="the line")
                if not isinstance(obj, dict):
                    raise ValueError("not a JSON object")
                rows.append(validate_row(obj, default_time))
            except json.JSONDecodeError as exc:
                errors.append((n, f"not valid JSON ({exc.msg})"))
            except ValueError as exc:
                errors.append((n, str(exc)))
    else:
        reader = csv.DictReader(io.StringIO(content))
        header = reader.fieldnames or []
        lacking = [k for k in ("model_a", "model_b", "winner") if k not in header]
        if lacking:
            raise VoteImportError(path, [(1, f"header lacks {', '.join(lacking)} (found: {', '.join(header)})")])
        for record in reader:
            n = reader.line_num
            if None in record:
                errors.append((n, "more fields than the header"))
                continue
            try:
                rows.append(validate_row({k: csv_uncell(v) for k, v in record.items()}, default_time))
            except ValueError as exc:
                errors.append((n, str(exc)))
    if errors:
        raise VoteImportError(path, errors)
    if not rows:
        raise VoteImportError(path, [(1, "no votes in the file")])
    return rows


def format_votes(votes: Iterable[VoteRow], fmt: str) -> str:
    """JSONL or CSV of the public vote fields (no session id, IP hash or user)."""
    records = [{k: getattr(v, k) for k in EXPORT_FIELDS} for v in votes]
    if fmt == "jsonl":
        return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    if fmt == "csv":
        buf = io.StringIO()
        # Every text cell quoted: the csv module's minimal quoting leaves a field with a lone CR (a reason may
        # hold one) unquoted when the line terminator is "\n", and readers then split the row there
        w = csv.DictWriter(buf, fieldnames=[*EXPORT_FIELDS, UNIX_COLUMN], lineterminator="\n",
                           quoting=csv.QUOTE_NONNUMERIC)
        w.writeheader()
        for r in records:
            out = {k: ("" if val is None else csv_cell(val)) for k, val in r.items()}
            out["created_at"], out[UNIX_COLUMN] = iso_utc(r["created_at"]), r["created_at"]
            w.writerow(out)
        return buf.getvalue()
    raise ValueError(f"format {fmt!r} is not jsonl or csv")


def count_votes(text: str, fmt: str) -> int:
    """How many votes an export holds: records, not lines (a CSV reason may hold newlines)."""
    if fmt == "jsonl":
        return sum(1 for line in text.split("\n") if line.strip())
    if fmt == "csv":
        return max(0, sum(1 for _ in csv.reader(io.StringIO(text))) - 1)     # minus the header
    raise ValueError(f"format {fmt!r} is not jsonl or csv")
