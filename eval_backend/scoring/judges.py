"""LLM judges behind any OpenAI-compatible endpoint: settings, client, cache, parsing, safety.

- Settings come from a dict (or a YAML file): `judge:` for the text judge and an
  optional `audio_judge:` for one that accepts `input_audio` parts.
- A call renders a `JudgePrompt` with a fresh random nonce: every piece of
  variable text sits between `<<NAME-nonce>>` / `<<END-NAME-nonce>>` markers and
  any `<<` / `>>` inside it is broken up, so a reply can neither guess nor type
  a closing marker. Text that addresses the judge is flagged, not hidden.
- Answers are parsed strictly (JSON) and then tolerantly (code fences, trailing
  prose, misspelt keys, "Score: 4"). An answer out of range or unreadable is
  asked again; after `max_retries` it is a judge failure. Nothing is defaulted.
- Each of the `n` samples is cached in SQLite under (judge model, prompt hash,
  input hash, temperature, seed, sample index); the nonce is not part of the key,
  so re-scoring the same replies makes no HTTP call.

A judge config (`--judge-config judges.yaml`; every key but base_url and model optional):

    judge:                       # text judge: C1-C4, AEQ coherence/supportiveness/naturalness/modality
      base_url: https://api.openai.com/v1      # reliance, discrimination, pairwise
      model: gpt-4o-mini
      api_key_env: OPENAI_API_KEY   # the key is read from this variable at call time, never stored
      temperature: 0.0
      seed: 0
      n: 3                       # samples averaged per item (each cached apart)
      max_retries: 2
      timeout_s: 60
      concurrency: 4
      calls_per_day: 1000        # budget: HTTP calls per UTC day to this judge model, per data dir
    audio_judge:                 # optional, must accept input_audio parts: VES, AEQ delivery
      base_url: http://127.0.0.1:8000/v1
      model: Qwen/Qwen2.5-Omni-7B
"""
from __future__ import annotations

import ast
import base64
import difflib
import hashlib
import json
import os
import re
import secrets
import sqlite3
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import yaml

from .judge_prompts import PAIRWISE, PAIRWISE_AUDIO, PROMPTS, JudgePrompt, Scale


# ---------------------------------------------------------------- settings
DEFAULT_CALLS_PER_DAY = 1000
BUDGET_REACHED = "judge budget reached: {limit} calls per UTC day to {model}; no further call until 00:00 UTC"


@dataclass(frozen=True)
class JudgeSettings:
    base_url: str
    model: str
    api_key_env: str | None = None
    temperature: float = 0.0
    seed: int | None = 0
    n: int = 1                    # samples averaged per item
    max_retries: int = 2          # extra attempts after an unreadable / out-of-range answer or a failed call
    timeout_s: float = 60.0
    max_tokens: int = 600
    concurrency: int = 4
    # budget: HTTP calls per UTC day to this judge model, counted in the judge cache file (so every process
    # and every judge path on one data dir shares it); retries count. 0 or None: no limit.
    calls_per_day: int | None = DEFAULT_CALLS_PER_DAY

    def public(self) -> dict:
        """What the results manifest records (never the key itself)."""
        return {"base_url": self.base_url, "model": self.model, "temperature": self.temperature,
                "seed": self.seed, "n": self.n, "max_retries": self.max_retries}


_FIELDS = set(JudgeSettings.__dataclass_fields__)


def _parse_settings(entry: Any, where: str) -> JudgeSettings | None:
    if not entry:
        return None
    if not isinstance(entry, dict):
        raise ValueError(f"{where}: expected a mapping, got {type(entry).__name__}")
    unknown = set(entry) - _FIELDS
    if unknown:
        raise ValueError(f"{where}: unknown judge setting(s) {sorted(unknown)}; known: {sorted(_FIELDS)}")
    missing = [k for k in ("base_url", "model") if not entry.get(k)]
    if missing:
        raise ValueError(f"{where}: judge needs {', '.join(missing)}")
    s = JudgeSettings(**entry)
    if s.n < 1 or s.max_retries < 0:
        raise ValueError(f"{where}: n must be >= 1 and max_retries >= 0")
    if s.calls_per_day is not None and (isinstance(s.calls_per_day, bool) or not isinstance(s.calls_per_day, int)
                                        or s.calls_per_day < 0):
        raise ValueError(f"{where}: calls_per_day must be a whole number >= 0 (0: no limit)")
    return s


def judge_settings(settings: dict | None) -> tuple[JudgeSettings | None, JudgeSettings | None]:
    """(text judge, audio judge) from scoring settings: keys `judge`, `audio_judge`, or `judge_config` (YAML path)."""
    settings = dict(settings or {})
    if settings.get("judge_config"):
        doc = yaml.safe_load(Path(settings["judge_config"]).read_text()) or {}
        settings = {**doc, **{k: v for k, v in settings.items() if k in ("judge", "audio_judge")}}
    return (_parse_settings(settings.get("judge"), "judge"),
            _parse_settings(settings.get("audio_judge"), "audio_judge"))


def judge_manifest(settings: dict | None) -> dict:
    """Judge models and prompt hashes for the results manifest."""
    text, audio = judge_settings(settings)
    return {
        "text_judge": text.public() if text else None,
        "audio_judge": audio.public() if audio else None,
        "prompts": {name: {"version": p.version, "hash": p.hash, "audio": p.audio} for name, p in PROMPTS.items()},
    }


# ---------------------------------------------------------------- injection safety
_MARKER_BREAK = re.compile(r"<{2,}|>{2,}")
_ADDRESSING = [
    ("ignore_instructions", re.compile(
        r"\b(ignore|disregard|forget|override)\s+(all\s+|any\s+|the\s+|your\s+|of\s+)*(previous|prior|above|earlier|"
        r"preceding|system|judging|grading|evaluation)\s+(instructions?|prompts?|rules|guidelines|messages?)", re.I)),
    ("addresses_judge", re.compile(
        r"\b(as|dear|attention|note to|hey)\s+(the\s+|an?\s+)?(ai\s+)?(judge|evaluator|grader|rater|assessor|reviewer)\b",
        re.I)),
    ("requests_score", re.compile(
        r"\b(give|assign|award)\b.{0,30}\b(score|rating|grade|marks?|[1-6]\s*/\s*[56]|5|6)\b"
        r"|\brate\s+(this|the|my)\s+(reply|response|answer)\b", re.I | re.S)),
    ("role_marker", re.compile(r"(^|\n)\s*(system|assistant|developer)\s*:|<\|?(system|im_start)\|?>|\[/?inst\]", re.I)),
    ("fake_marker", re.compile(r"<<\s*/?\s*(end-)?[a-z_]*-?[0-9a-f]*\s*>>", re.I)),
]


def injection_flags(text: str) -> list[str]:
    """Names of the ways a piece of judged text tries to talk to the judge (empty = none)."""
    if not text:
        return []
    flags = [name for name, rx in _ADDRESSING if rx.search(text)]
    # "score" alone is common in ordinary replies (a football score): require a judge-ish context for it
    if flags == ["requests_score"] and not re.search(r"\b(judge|evaluat|grader|rating|rate this)\w*", text, re.I):
        flags = []
    return flags


def neutralise(text: str) -> str:
    """Turn every run of 2+ `<` / `>` into visible look-alikes (‹‹ ››), so untrusted text cannot produce
    a marker whatever the nonce, and the judge sees that it was escaped."""
    return _MARKER_BREAK.sub(lambda m: ("\u2039" if m.group(0)[0] == "<" else "\u203a") * len(m.group(0)), text)


def wrap(name: str, text: str, nonce: str) -> str:
    tag = name.upper()
    return f"<<{tag}-{nonce}>>\n{neutralise(text)}\n<<END-{tag}-{nonce}>>"


def new_nonce() -> str:
    return secrets.token_hex(8)


@dataclass
class Rendered:
    system: str
    user: str
    nonce: str


Block = str | list  # one text, or a list of (name, text) pairs rendered as successive wrapped blocks


def _wrap_block(key: str, value: Block, nonce: str) -> str:
    if isinstance(value, str):
        return wrap(key, value, nonce)
    return "\n".join(wrap(name, text, nonce) for name, text in value)


def judged_texts(blocks: dict[str, Block]) -> list[str]:
    """The replies inside a prompt's blocks (keys / names `reply`, `reply_*`): what injection flags look at."""
    out = []
    for key, value in blocks.items():
        if isinstance(value, str):
            if key == "reply" or key.startswith("reply_"):
                out.append(value)
        else:
            out += [text for name, text in value if name.lower().startswith("reply")]
    return out


def render(prompt: JudgePrompt, blocks: dict[str, Block], plain: dict[str, str] | None = None,
           nonce: str | None = None) -> Rendered:
    """Fill a prompt: `blocks` are untrusted text (wrapped), `plain` short labels (still neutralised)."""
    nonce = nonce or new_nonce()
    values = {k: _wrap_block(k, v, nonce) for k, v in blocks.items()}
    values.update({k: neutralise(str(v)).replace("\n", " ") for k, v in (plain or {}).items()})
    user = prompt.template.format(spec=prompt.output_spec(), **values)
    return Rendered(prompt.system.format(nonce=nonce), user, nonce)


# ---------------------------------------------------------------- parsing
class ParseError(ValueError):
    """The judge's answer could not be read, or a value is out of range."""


_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.S)
_REASONISH = ("reason", "resaon", "reasn", "reson", "raeson", "reasoning", "rationale", "explanation", "why",
              "justification", "comment")
_SCOREISH = ("score", "rating", "value", "label", "grade", "rate", "verdict", "answer", "result")


def _norm(key: str) -> str:
    return re.sub(r"[^a-z0-9]", "", str(key).lower())


def _json_objects(text: str) -> list[str]:
    """Balanced {...} spans, outermost first, ignoring braces inside strings."""
    spans, depth, start, in_str, esc = [], 0, None, None, False
    for i, ch in enumerate(text):
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == in_str:
                in_str = None
            continue
        if ch in "\"'" and depth > 0:
            in_str = ch if ch == '"' else None   # single quotes also occur as apostrophes: only track "
            continue
        if ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                spans.append(text[start:i + 1])
    return sorted(spans, key=len, reverse=True)


def _loads_lenient(chunk: str) -> Any:
    for attempt in (chunk, re.sub(r",\s*([}\]])", r"\1", chunk)):
        try:
            return json.loads(attempt)
        except ValueError:
            pass
        try:  # single-quoted keys, Python literals
            return ast.literal_eval(attempt.replace("true", "True").replace("false", "False").replace("null", "None"))
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            pass
    raise ParseError("no readable JSON object")


def _alias_table(prompt: JudgePrompt) -> dict[str, str]:
    table = {}
    for name, _ in prompt.fields:
        for alias in (name, *prompt.aliases.get(name, ())):
            table.setdefault(_norm(alias), name)
    return table


def _match_field(key: str, table: dict[str, str]) -> str | None:
    k = _norm(key)
    if k in table:
        return table[k]
    close = difflib.get_close_matches(k, list(table), n=1, cutoff=0.85)
    return table[close[0]] if close else None


def _split_suffix(key: str) -> tuple[str, str]:
    """'c1_resaon' -> ('c1', 'reason'); 'context_fit_score' -> ('context_fit', 'score'); 'c2' -> ('c2', '')."""
    parts = re.split(r"[\s_\-.]+", str(key).strip())
    if len(parts) > 1:
        last = parts[-1].lower()
        if last in _SCOREISH:
            return "_".join(parts[:-1]), "score"
        if last in _REASONISH or difflib.get_close_matches(last, ["reason"], n=1, cutoff=0.6):
            return "_".join(parts[:-1]), "reason"
    return str(key), ""


def _is_reason_key(key: str) -> bool:
    k = _norm(key)
    return k in _REASONISH or bool(difflib.get_close_matches(k, ["reason"], n=1, cutoff=0.6))


def _collect(obj: dict, table: dict[str, str]) -> tuple[dict[str, Any], dict[str, str]]:
    values: dict[str, Any] = {}
    reasons: dict[str, str] = {}
    for key, val in obj.items():
        if isinstance(val, dict):
            name = _match_field(key, table)
            if name is None:                  # e.g. {"scores": {...}} wrapping the fields
                inner_v, inner_r = _collect(val, table)
                values.update({k: v for k, v in inner_v.items() if k not in values})
                reasons.update({k: v for k, v in inner_r.items() if k not in reasons})
                continue
            for ik, iv in val.items():
                if _norm(ik) in _SCOREISH and name not in values:
                    values[name] = iv
                elif _is_reason_key(ik):
                    reasons[name] = str(iv)
            continue
        base, kind = _split_suffix(key)
        name = _match_field(base, table)
        if name is None:
            continue
        if kind == "reason":
            reasons[name] = str(val)
        elif name not in values or kind == "score":
            values[name] = val
    return values, reasons


def read_value(raw: Any, scale: Scale) -> float:
    """One field's value on its scale; raises ParseError for out-of-range or unknown labels."""
    if scale.labels:
        text = _norm(raw if not isinstance(raw, bool) else ("yes" if raw else "no"))
        if isinstance(raw, (int, float)) and not isinstance(raw, bool):
            text = _norm(f"{raw:g}")
        for label, value in scale.labels:
            if text == _norm(label):
                return value
        # "reply 1", "good." and the like
        hits = [value for label, value in scale.labels if re.search(rf"(^|[^a-z0-9]){re.escape(_norm(label))}($|[^a-z0-9])",
                                                                     str(raw).lower())]
        if len(set(hits)) == 1:
            return hits[0]
        raise ParseError(f"{raw!r} is not one of {scale.describe()}")
    if isinstance(raw, bool):
        raise ParseError(f"{raw!r} is not a number")
    if isinstance(raw, (int, float)):
        value = float(raw)
    else:
        m = re.fullmatch(r"\s*\[*\s*(-?\d+(?:\.\d+)?)\s*\]*\s*(?:(?:/|out of|of)\s*\d+)?\s*\.?\s*", str(raw))
        if not m:
            raise ParseError(f"{raw!r} is not a number")
        value = float(m.group(1))
    if not (scale.lo <= value <= scale.hi):
        raise ParseError(f"{value:g} is outside {scale.lo:g}-{scale.hi:g}")
    return value


@dataclass
class Parsed:
    values: dict[str, float]
    reasons: dict[str, str]
    mode: str                      # strict | tolerant | text


def _regex_fields(text: str, prompt: JudgePrompt) -> dict[str, str]:
    """Last resort for prose answers: 'C1: 4', 'Coherence - Good', 'Score: 4' (single-field prompts)."""
    found = {}
    for name, scale in prompt.fields:
        names = [name, *prompt.aliases.get(name, ())]
        if len(prompt.fields) == 1:
            names += ["score", "rating"]
        value_rx = (r"(" + "|".join(re.escape(l) for l, _ in scale.labels) + r")\b" if scale.labels
                    else r"(-?\d+(?:\.\d+)?)")
        for alias in names:
            words = "[ _-]?".join(re.escape(w) for w in re.split(r"[ _-]+", alias))
            rx = re.compile(rf"\b{words}"
                            rf"(?:[ _-]?(?:score|rating))?\W{{0,4}}[:=\-]\s*\**\s*\[*\s*{value_rx}", re.I)
            m = rx.search(text)
            if m:
                found[name] = m.group(1)
                break
    return found


def parse_answer(text: str, prompt: JudgePrompt) -> Parsed:
    """Strict JSON first, then tolerant; raises ParseError (never guesses a value)."""
    if not isinstance(text, str) or not text.strip():
        raise ParseError("empty answer")
    table = _alias_table(prompt)
    wanted = [name for name, _ in prompt.fields]
    scales = dict(prompt.fields)
    candidates: list[tuple[str, Any]] = []
    try:
        candidates.append(("strict", json.loads(text)))
    except ValueError:
        pass
    for chunk in _FENCE.findall(text) + _json_objects(text):
        try:
            candidates.append(("tolerant", _loads_lenient(chunk.strip())))
        except ParseError:
            continue
    last_error: ParseError | None = None
    for mode, obj in candidates:
        if not isinstance(obj, dict):
            continue
        raw_values, reasons = _collect(obj, table)
        if mode == "strict" and set(obj) != set(wanted):
            mode = "tolerant"
        missing = [k for k in wanted if k not in raw_values]
        if missing:
            last_error = ParseError(f"answer lacks {', '.join(missing)}")
            continue
        try:
            values = {k: read_value(raw_values[k], scales[k]) for k in wanted}
        except ParseError as exc:   # out of range in JSON: not rescued by a prose fallback
            raise exc
        return Parsed(values, reasons, mode)
    loose = _regex_fields(text, prompt)
    if all(k in loose for k in wanted):
        return Parsed({k: read_value(loose[k], scales[k]) for k in wanted}, {}, "text")
    raise last_error or ParseError("no readable answer")


# ---------------------------------------------------------------- cache
class JudgeCache:
    """SQLite file of judge answers; safe across threads (one connection per thread).

    A row holds either a readable answer, or the parse failure the judge ended on after `attempts`
    tries (its answers were unusable: asking again with the same settings costs money and is as
    likely to fail). Call failures (timeouts, HTTP errors) are transient and never stored."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self._conn().execute(
            "CREATE TABLE IF NOT EXISTS judge_cache (key TEXT PRIMARY KEY, judge_model TEXT, prompt_hash TEXT, "
            "input_hash TEXT, answer TEXT, failure TEXT, attempts INTEGER, created_at REAL)")

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA busy_timeout=30000")
            self._local.conn = conn
        return conn

    def get(self, key: str) -> tuple[str | None, str | None, int] | None:
        """(answer, failure, attempts) or None when absent."""
        row = self._conn().execute("SELECT answer, failure, attempts FROM judge_cache WHERE key=?", (key,)).fetchone()
        return (row[0], row[1], row[2] or 0) if row else None

    def put(self, key: str, judge_model: str, prompt_hash: str, input_hash: str, answer: str | None,
            failure: str | None = None, attempts: int = 1) -> None:
        self._conn().execute("INSERT OR REPLACE INTO judge_cache VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                             (key, judge_model, prompt_hash, input_hash, answer, failure, attempts, time.time()))

    # the daily call budget lives in the same file: one count per (UTC day, judge model) for every process
    def take_call(self, model: str, limit: int, day: str | None = None) -> bool:
        """Count one call to `model` today unless `limit` calls were already counted; False = over budget."""
        day = day or utc_day()
        conn = self._conn()
        conn.execute("CREATE TABLE IF NOT EXISTS judge_budget (day TEXT, model TEXT, calls INTEGER, "
                     "PRIMARY KEY (day, model))")
        conn.execute("BEGIN IMMEDIATE")
        try:
            row = conn.execute("SELECT calls FROM judge_budget WHERE day=? AND model=?", (day, model)).fetchone()
            used = row[0] if row else 0
            if used >= limit:
                return False
            conn.execute("INSERT OR REPLACE INTO judge_budget VALUES (?, ?, ?)", (day, model, used + 1))
            return True
        finally:
            conn.execute("COMMIT")

    def calls_today(self, model: str, day: str | None = None) -> int:
        conn = self._conn()
        conn.execute("CREATE TABLE IF NOT EXISTS judge_budget (day TEXT, model TEXT, calls INTEGER, "
                     "PRIMARY KEY (day, model))")
        row = conn.execute("SELECT calls FROM judge_budget WHERE day=? AND model=?",
                           (day or utc_day(), model)).fetchone()
        return row[0] if row else 0


def utc_day(t: float | None = None) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(time.time() if t is None else t))


def input_hash(blocks: dict[str, Block], plain: dict[str, str] | None, audios: list[bytes]) -> str:
    doc = json.dumps({"blocks": blocks, "plain": plain or {},
                      "audio": [hashlib.sha256(a).hexdigest() for a in audios]}, sort_keys=True)
    return hashlib.sha256(doc.encode()).hexdigest()


# ---------------------------------------------------------------- client
NOT_CACHED = "not in the judge cache (cache-only rescore)"


class JudgeCallError(RuntimeError):
    """The HTTP call failed (timeout, status, malformed body)."""


class JudgeClient:
    """One judge endpoint. `calls` counts HTTP requests actually sent (cache hits do not count)."""

    def __init__(self, settings: JudgeSettings, cache: JudgeCache | None = None, cache_only: bool = False):
        self.settings = settings
        self.cache = cache
        self.cache_only = cache_only          # rescore: answers come from the cache or not at all
        self.calls = 0
        self._budget_local = 0                # without a cache file, the budget is counted in this client
        self._lock = threading.Lock()
        key = os.environ.get(settings.api_key_env) if settings.api_key_env else None
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._http = httpx.Client(base_url=settings.base_url.rstrip("/") + "/", headers=headers,
                                  timeout=settings.timeout_s)

    def close(self) -> None:
        self._http.close()

    def chat(self, messages: list[dict], seed: int | None) -> str:
        body: dict[str, Any] = {"model": self.settings.model, "messages": messages,
                                "temperature": self.settings.temperature, "max_tokens": self.settings.max_tokens}
        if seed is not None:
            body["seed"] = seed
        limit = self.settings.calls_per_day
        if limit:
            if self.cache is not None:
                allowed = self.cache.take_call(self.settings.model, limit)
            else:
                with self._lock:
                    allowed = self._budget_local < limit
                    self._budget_local += allowed
            if not allowed:
                raise JudgeCallError(BUDGET_REACHED.format(limit=limit, model=self.settings.model))
        with self._lock:
            self.calls += 1
        try:
            resp = self._http.post("chat/completions", json=body)
        except httpx.TimeoutException:
            raise JudgeCallError("timeout") from None
        except httpx.HTTPError as exc:
            raise JudgeCallError(f"connection: {exc}") from None
        if resp.status_code != 200:
            raise JudgeCallError(f"http {resp.status_code}: {resp.text[:200]}")
        try:
            content = resp.json()["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise JudgeCallError(f"malformed body: {resp.text[:200]}") from None
        if isinstance(content, list):     # some servers return content parts
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        if not isinstance(content, str):
            raise JudgeCallError("malformed body: content is not text")
        return content


@dataclass
class Judgment:
    """One item judged: values averaged over the samples that could be read."""
    values: dict[str, float] | None          # None = judge failure
    samples: list[dict] = field(default_factory=list)   # per sample: values, reasons, mode, attempts, error
    flags: list[str] = field(default_factory=list)      # injection flags of the judged text
    error: str | None = None
    http_calls: int = 0

    @property
    def ok(self) -> bool:
        return self.values is not None

    def raw(self) -> dict:
        return {"values": self.values, "samples": self.samples, "injection_flags": self.flags, "error": self.error}


def _user_content(text: str, audios: list[bytes]) -> str | list[dict]:
    if not audios:
        return text
    parts: list[dict] = [{"type": "text", "text": text}]
    for data in audios:
        parts.append({"type": "input_audio",
                      "input_audio": {"data": base64.b64encode(data).decode("ascii"), "format": "wav"}})
    return parts


def run_judge(client: JudgeClient, prompt: JudgePrompt, blocks: dict[str, Block],
              plain: dict[str, str] | None = None, audios: list[bytes] | None = None) -> Judgment:
    """Judge one item: n samples, each retried on unreadable answers or failed calls, cached once readable."""
    audios = audios or []
    s = client.settings
    ihash = input_hash(blocks, plain, audios)
    flags = sorted({f for text in judged_texts(blocks) for f in injection_flags(text)})
    samples, got, sent = [], [], 0
    for i in range(s.n):
        key = hashlib.sha256(json.dumps([s.model, prompt.hash, ihash, s.temperature, s.seed, i]).encode()).hexdigest()
        hit = client.cache.get(key) if client.cache else None
        if hit is not None:
            answer, failure, tried = hit
            if failure is not None and tried >= s.max_retries + 1:
                samples.append({"values": None, "error": failure})
                continue
            if answer is not None:
                try:
                    p = parse_answer(answer, prompt)
                    samples.append({"values": p.values, "reasons": p.reasons, "mode": p.mode})
                    got.append(p.values)
                    continue
                except ParseError:
                    pass  # a cache written by an older parser: ask again
        if client.cache_only:
            samples.append({"values": None, "error": NOT_CACHED})
            continue
        r = render(prompt, blocks, plain)
        messages = [{"role": "system", "content": r.system}, {"role": "user", "content": _user_content(r.user, audios)}]
        error, parse_failed = None, False
        for attempt in range(s.max_retries + 1):
            seed = None if s.seed is None else s.seed + i + 1000 * attempt
            try:
                sent += 1
                answer = client.chat(messages, seed)
            except JudgeCallError as exc:
                error, parse_failed = f"call: {exc}", False
                continue
            try:
                p = parse_answer(answer, prompt)
            except ParseError as exc:
                error, parse_failed = f"parse: {exc}", True
                # say what was wrong and ask again; the bad answer stays in the conversation
                messages = messages[:2] + [
                    {"role": "assistant", "content": answer[:2000]},
                    {"role": "user", "content": f"That answer could not be used ({exc}). Reply again with only "
                                                f"the JSON object in the requested shape."}]
                continue
            if client.cache:
                client.cache.put(key, s.model, prompt.hash, ihash, answer)
            samples.append({"values": p.values, "reasons": p.reasons, "mode": p.mode})
            got.append(p.values)
            error = None
            break
        if error:
            error = f"{error} (after {s.max_retries + 1} attempts)"
            if parse_failed and client.cache:
                client.cache.put(key, s.model, prompt.hash, ihash, None, error, s.max_retries + 1)
            samples.append({"values": None, "error": error})
    if not got:
        return Judgment(None, samples, flags, error=samples[-1].get("error") if samples else "no samples",
                        http_calls=sent)
    values = {k: sum(g[k] for g in got) / len(got) for k in got[0]}
    return Judgment(values, samples, flags, http_calls=sent)


# ---------------------------------------------------------------- judges from settings
@dataclass
class Judges:
    text: JudgeClient | None
    audio: JudgeClient | None


def make_judges(settings: dict | None, cache_path: str | Path | None) -> Judges:
    text, audio = judge_settings(settings)
    cache = JudgeCache(cache_path) if cache_path and (text or audio) else None
    only = bool((settings or {}).get("cache_only"))
    for which, js in (("judge", text), ("audio_judge", audio)):
        if js and js.api_key_env and not os.environ.get(js.api_key_env) and not only:
            raise ValueError(f"{which}: api_key_env {js.api_key_env} is not set in the environment")
    return Judges(JudgeClient(text, cache, only) if text else None, JudgeClient(audio, cache, only) if audio else None)


def judges_for(ctx) -> Judges:
    """The run's judges, made once per ScoringContext; the cache sits in the data dir unless configured."""
    if "judges" not in ctx.cache:
        path = ctx.settings.get("judge_cache") or (ctx.store.root / "cache" / "judge_cache.sqlite3")
        ctx.cache["judges"] = make_judges(ctx.settings, path)
    return ctx.cache["judges"]


# ---------------------------------------------------------------- what a request asked
@dataclass
class RequestInfo:
    task: str
    item_id: str
    variant: str
    user_words: str
    context: str
    voice: str                  # attribute / tone label, or "not annotated"
    topic: str
    user_audio: str | None      # local wav path


def request_index(benchmark) -> dict[str, RequestInfo]:
    """request id -> RequestInfo for every spoken-task request of a benchmark (memoised per object)."""
    hit = _INDEX.get(id(benchmark))
    if hit is not None and hit[0] is benchmark:
        return hit[1]
    index: dict[str, RequestInfo] = {}
    for s in benchmark.scripts:
        for name, v in s.variants.items():
            index[f"conversation/{s.id}/{name}"] = RequestInfo("conversation", s.id, name, s.text, "(none)",
                                                               v.attribute, s.topic, v.audio.path)
    for g in benchmark.context_groups:
        for c in g.cases:
            index[f"context/{g.id}/{c.id}"] = RequestInfo("context", g.id, c.id, g.utterance_text, c.context,
                                                          g.attribute or "not annotated", "", g.audio.path)
    for g in benchmark.tone_groups:
        for c in g.cases:
            index[f"tone/{g.id}/{c.id}"] = RequestInfo("tone", g.id, c.id, g.text, g.context, c.tone, "",
                                                       c.audio.path)
    if len(_INDEX) > 8:
        _INDEX.clear()
    _INDEX[id(benchmark)] = (benchmark, index)
    return index


_INDEX: dict[int, tuple[Any, dict[str, RequestInfo]]] = {}


def describe_request(benchmark, request_id: str) -> RequestInfo | None:
    """What the user said and how, for a spoken-task request id; None if the item is not in the benchmark."""
    return request_index(benchmark).get(request_id)


def reply_text(reply) -> str | None:
    return (reply.text or reply.transcript or "").strip() or None


# ---------------------------------------------------------------- pairwise
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
    if info is None:
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
    plain = {"voice": info.voice}
    flags = {"A": injection_flags(reply_text(replies[model_a]) or ""),
             "B": injection_flags(reply_text(replies[model_b]) or "")}
    if use_audio:
        if not audio_ok:
            return none(f"audio judging needs the user's clip and both replies' audio on {request_id}")
        user = user_clip.read_bytes()
        clip = {m: store.abspath(r.audio_path).read_bytes() for m, r in replies.items()}
        ab = run_judge(client, PAIRWISE_AUDIO, {"context": info.context}, plain, [user, clip[model_a], clip[model_b]])
        ba = run_judge(client, PAIRWISE_AUDIO, {"context": info.context}, plain, [user, clip[model_b], clip[model_a]])
    else:
        texts = {m: reply_text(r) for m, r in replies.items()}
        for m, t in texts.items():
            if not t:
                return none(f"no text or transcript for {m} on {request_id}")
        base = {"context": info.context, "user": info.user_words}
        ab = run_judge(client, PAIRWISE, {**base, "reply_1": texts[model_a], "reply_2": texts[model_b]}, plain)
        ba = run_judge(client, PAIRWISE, {**base, "reply_1": texts[model_b], "reply_2": texts[model_a]}, plain)
    w_ab, w_ba = _order_winner(ab, "A", "B"), _order_winner(ba, "B", "A")
    verdict = combine_orders(w_ab, w_ba)
    return PairVerdict(request_id, model_a, model_b, verdict, {"AB": w_ab, "BA": w_ba},
                       (w_ab == w_ba) if verdict else None, flags, None if verdict else (ab.error or ba.error),
                       judge="audio" if use_audio else "text")
