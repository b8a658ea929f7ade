"""The Space's judges, from its environment: the same settings `worker --judge-config FILE` reads from YAML.

    EMPATHY_ARENA_JUDGE_BASE_URL          text judge's OpenAI-compatible base URL (unset: no text judge)
    EMPATHY_ARENA_JUDGE_MODEL             its model name (needed with the base URL)
    EMPATHY_ARENA_JUDGE_API_KEY_ENV       NAME of the variable holding its API key (the key itself is read at
                                          call time and never written anywhere)
    EMPATHY_ARENA_AUDIO_JUDGE_BASE_URL    the audio-capable judge (VES, AEQ delivery), same three settings
    EMPATHY_ARENA_AUDIO_JUDGE_MODEL
    EMPATHY_ARENA_AUDIO_JUDGE_API_KEY_ENV
    EMPATHY_ARENA_JUDGE_CALLS_PER_DAY     budget per judge model and UTC day, shared by every judge path on the
                                          data dir (default judges.DEFAULT_CALLS_PER_DAY = 1000; 0: no limit)
    EMPATHY_ARENA_JUDGE_CONFIG            or: a judge YAML file (as for --judge-config); the variables above
                                          then must be unset

`space_judge_config(data_dir)` turns them into a YAML file under the data dir (`judge/space_judges.yaml`,
no secret in it) whose path goes where `--judge-config` would: the in-process worker's settings, and from
there every results manifest (`manifest.judge`, `manifest.settings.judge_config`).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping

import yaml

PREFIX = "EMPATHY_ARENA_"
CONFIG_ENV = PREFIX + "JUDGE_CONFIG"
BUDGET_ENV = PREFIX + "JUDGE_CALLS_PER_DAY"
ROLES = {"judge": PREFIX + "JUDGE_", "audio_judge": PREFIX + "AUDIO_JUDGE_"}
FIELDS = {"BASE_URL": "base_url", "MODEL": "model", "API_KEY_ENV": "api_key_env"}
CONFIG_FILE = Path("judge") / "space_judges.yaml"


def judge_doc_from_env(environ: Mapping[str, str] | None = None) -> dict | None:
    """{"judge": {...}, "audio_judge": {...}} from the variables; None when none is set. Raises ValueError with
    the variable's name for an incomplete or bad setting."""
    from .judges.settings import parse_settings  # why: the judges package (~0.2 s) off the app's start-up
    env = os.environ if environ is None else environ
    doc: dict = {}
    for role, prefix in ROLES.items():
        entry = {key: env[prefix + var].strip() for var, key in FIELDS.items() if (env.get(prefix + var) or "").strip()}
        if not entry:
            continue
        missing = [prefix + var for var, key in FIELDS.items() if key in ("base_url", "model") and key not in entry]
        if missing:
            raise ValueError(f"{', '.join(missing)} must be set with {prefix}BASE_URL / {prefix}MODEL")
        doc[role] = entry
    budget = (env.get(BUDGET_ENV) or "").strip()
    if budget:
        try:
            n = int(budget)
        except ValueError:
            raise ValueError(f"{BUDGET_ENV} must be a whole number of calls per day, not {budget!r}") from None
        if n < 0:
            raise ValueError(f"{BUDGET_ENV} must be >= 0 (0: no limit)")
        for entry in doc.values():
            entry["calls_per_day"] = n
    for role, entry in doc.items():
        parse_settings(entry, role)          # the scorer's own checks, at start-up rather than mid-job
    return doc or None


def space_judge_config(data_dir: str | Path, environ: Mapping[str, str] | None = None) -> str | None:
    """The judge YAML path the Space's worker uses (None: no judge). Writes the variables' settings to
    `<data_dir>/judge/space_judges.yaml`; EMPATHY_ARENA_JUDGE_CONFIG names an existing file instead."""
    env = os.environ if environ is None else environ
    given = (env.get(CONFIG_ENV) or "").strip()
    doc = judge_doc_from_env(env)
    if given:
        if doc:
            raise ValueError(f"set either {CONFIG_ENV} or the {PREFIX}JUDGE_* / {PREFIX}AUDIO_JUDGE_* variables, "
                             f"not both")
        path = Path(given).expanduser()
        if not path.is_file():
            raise ValueError(f"{CONFIG_ENV}: {path} does not exist")
        from .judges import judge_settings  # why: the judges package (~0.2 s) off the app's start-up
        judge_settings({"judge_config": str(path)})      # fails here on a bad file, not in the first job
        return str(path.resolve())
    if not doc:
        return None
    path = Path(data_dir) / CONFIG_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "# written by the Space from its EMPATHY_ARENA_*JUDGE_* variables at start-up; no secret here\n"
    path.write_text(text + yaml.safe_dump(doc, sort_keys=True))
    return str(path.resolve())


def describe(judge_config: str | None) -> str:
    """One line for the About tab: which judges the Space's worker scores with, and their budget."""
    if not judge_config:
        return ("No judge is configured: judge metrics (C1-C4, VES, AEQ) show 'not computed: no judge "
                "configured'.")
    from .judges import judge_settings  # why: the judges package (~0.2 s) off the app's start-up
    try:
        text, audio = judge_settings({"judge_config": judge_config})
    except (OSError, ValueError) as exc:
        return f"The judge settings cannot be read: {exc}"
    parts = []
    for what, js in (("text judge", text), ("audio judge", audio)):
        if js is None:
            parts.append(f"no {what}")
        else:
            budget = f"{js.calls_per_day} calls per UTC day" if js.calls_per_day else "no call limit"
            parts.append(f"{what} `{js.model}` ({budget})")
    return "New submissions are scored with: " + "; ".join(parts) + "."
