"""One judge endpoint (`JudgeClient`: an OpenAI-compatible chat call within the daily budget) and judging one
item through it (`run_judge`: n samples, each retried on an unreadable answer or a failed call, cached once
readable); `make_judges` / `judges_for` build the run's text and audio judges from settings."""
from __future__ import annotations

import base64
import hashlib
import json
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from ..judge_prompts import JudgePrompt
from .cache import JudgeCache, input_hash
from .parse import ParseError, parse_answer
from .rendering import Block, injection_flags, judged_texts, render
from .settings import BUDGET_REACHED, JudgeSettings, judge_settings

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
