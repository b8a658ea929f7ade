"""The scorer's settings dict (what `score_model` in eval_backend/scoring/run.py reads): built here once for every
caller, the command lines (`score`, `rescore`, `python -m leaderboard agreement`), the worker and the bootstrap."""
from __future__ import annotations

from pathlib import Path


def build_settings(judge_config: str | None, data_dir: Path, cache_only: bool = False) -> dict:
    """`judge_config`: a judge YAML (must exist; None: no judge, those metrics read 'not computed');
    `cache_only`: judges answer from their cache only (rescore)."""
    settings: dict = {"data_dir": str(data_dir)}
    if judge_config:
        path = Path(judge_config).expanduser()
        if not path.is_file():
            raise ValueError(f"judge config {path} does not exist")
        settings["judge_config"] = str(path.resolve())
    if cache_only:
        settings["cache_only"] = True   # rescore: judges answer from their cache only
    return settings
