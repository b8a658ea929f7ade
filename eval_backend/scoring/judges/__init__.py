"""LLM judges behind any OpenAI-compatible endpoint, one module per job:

- `settings`: `judge:` for the text judge and an optional `audio_judge:` for one that accepts `input_audio`
  parts, from a dict or a YAML file; what the results manifest records.
- `rendering`: a call renders a `JudgePrompt` with a fresh random nonce: every piece of variable text sits
  between `<<NAME-nonce>>` / `<<END-NAME-nonce>>` markers and any `<<` / `>>` inside it is broken up, so a
  reply can neither guess nor type a closing marker. Text that addresses the judge is flagged, not hidden.
- `parse`: answers are parsed strictly (JSON) and then tolerantly (code fences, trailing prose, misspelt
  keys, "Score: 4"). An answer out of range or unreadable is asked again; after `max_retries` it is a judge
  failure. Nothing is defaulted.
- `cache`: each of the `n` samples is cached in SQLite under (judge model, prompt hash, input hash,
  temperature, seed, sample index); the nonce is not part of the key, so re-scoring the same replies makes
  no HTTP call. The daily call budget is counted in the same file.
- `client`: one endpoint (`JudgeClient`), judging one item (`run_judge`), the run's judges (`judges_for`).
- `pairwise`: A vs B on one request, asked in both orders (`judge_pair`).

What a request asked (the user's words, the context, the voice) comes from `eval_backend.tasks.Request`;
a reply's words from `scoring.registry.reply_text`.

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

from .cache import JudgeCache, input_hash, utc_day
from .client import NOT_CACHED, JudgeCallError, JudgeClient, Judges, Judgment, judges_for, make_judges, run_judge
from .pairwise import PairVerdict, combine_orders, judge_pair
from .parse import Parsed, ParseError, parse_answer, read_value
from .rendering import Block, Rendered, context_text, injection_flags, judged_texts, neutralise, new_nonce, render, wrap
from .settings import (
                     BUDGET_REACHED,
                     DEFAULT_CALLS_PER_DAY,
                     JudgeSettings,
                     judge_manifest,
                     judge_settings,
                     parse_settings,
)

__all__ = [
    "JudgeCache", "input_hash", "utc_day",
    "NOT_CACHED", "JudgeCallError", "JudgeClient", "Judges", "Judgment", "judges_for", "make_judges", "run_judge",
    "PairVerdict", "combine_orders", "judge_pair",
    "Parsed", "ParseError", "parse_answer", "read_value",
    "Block", "Rendered", "context_text", "injection_flags", "judged_texts", "neutralise", "new_nonce", "render", "wrap",
    "BUDGET_REACHED", "DEFAULT_CALLS_PER_DAY", "JudgeSettings", "judge_manifest", "judge_settings", "parse_settings",
]
