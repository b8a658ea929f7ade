"""One real run of the whole offline pipeline, shared by the slow acceptance tests.

Builds the demo benchmark (espeak-ng; once per `scripts/test.sh` run for each set of build arguments: the second
database pass copies the first pass's build, see `build_demo`), serves both baselines on loopback and runs
`python -m eval_backend run` for cascade-blind and cascade-cue in parallel (the
server's ASR and feature caches are shared, so each clip is transcribed and measured once). The end-to-end
test checks what was stored; the known-groups test scores it. Running it once
instead of per test saves several minutes of Whisper in CI.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from eval_backend.audio.asr import ASR_CACHE_ENV
from eval_backend.audio.feature_cache import FEATURE_CACHE_ENV
from tests.support.baselines import ROOT, BaselineServer

MODELS = ("cascade-blind", "cascade-cue")


@dataclass
class DemoRun:
    data: Path
    stats: dict            # the baseline server's /stats after both runs
    outputs: list[str]     # the runner's output per model
    returncodes: list[int]
    build_s: float
    run_s: float
    database_url: str | None = None   # PostgreSQL runs: the run's own database (tests using it switch to it)


def measure_cache_env() -> dict[str, str]:
    """Whisper's transcripts (eval_backend/audio/asr.py) and the clips' features (eval_backend/audio/feature_cache.py)
    kept on disk in the folder scripts/test.sh gives both database passes (EMPATHY_ARENA_TEST_CACHE): the PostgreSQL
    pass's demo runs and scorings decode and measure no clip the SQLite pass did (the SQLite pass measures every
    clip itself; both are keyed by the samples and the code and libraries that measure them). Nothing timed runs
    through here."""
    folder = os.environ.get("EMPATHY_ARENA_TEST_CACHE")
    return {ASR_CACHE_ENV: str(Path(folder) / "asr"), FEATURE_CACHE_ENV: str(Path(folder) / "features")} if folder else {}


def pipeline_env(database_url: str | None = None) -> dict[str, str]:
    """The environment of a pipeline command (run, score): this process's, the run's database, the measurement
    caches (measure_cache_env)."""
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    if database_url:
        env["DATABASE_URL"] = database_url
    return {**env, **measure_cache_env()}


def _build_key(demo_args: tuple[str, ...]) -> str:
    """What a demo build depends on: its arguments, the code of eval_backend (the builder and the synthesis it
    calls) and the espeak-ng that speaks it."""
    h = hashlib.sha256(repr(demo_args).encode())
    for path in sorted((ROOT / "eval_backend").rglob("*.py")):
        h.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes())
    h.update(subprocess.run(["espeak-ng", "--version"], capture_output=True).stdout)
    return h.hexdigest()[:32]


def build_demo(data: Path, demo_args: tuple[str, ...], env: dict[str, str]) -> None:
    """`python -m eval_backend demo build` into `data`. Under scripts/test.sh (EMPATHY_ARENA_TEST_CACHE) a build
    is kept by `_build_key`, and a later build with the same key copies it instead: the demo build is files only
    (no store), so the PostgreSQL pass loses no check by copying what the SQLite pass built; tests of the build
    itself (tests/test_demo_benchmark.py) build it every time."""
    target = data / "benchmarks" / "demo"
    folder = os.environ.get("EMPATHY_ARENA_TEST_CACHE")
    kept = Path(folder) / "demo" / _build_key(demo_args) if folder else None
    if kept is not None and kept.is_dir():
        shutil.copytree(kept, target)
        return
    subprocess.run([sys.executable, "-m", "eval_backend", "demo", "build", "--data-dir", str(data), *demo_args],
                   cwd=ROOT, check=True, capture_output=True, timeout=900, env=env)
    if kept is not None:
        partial = kept.with_name(f".{kept.name}.{os.getpid()}")
        shutil.copytree(target, partial)
        try:
            partial.rename(kept)          # atomic: another process's build of the same key may have won
        except OSError:
            shutil.rmtree(partial, ignore_errors=True)


def run_demo_pipeline(root: Path, database_url: str | None = None, demo_args: tuple[str, ...] = (),
                      tasks: str | None = None, models: tuple[str, ...] = MODELS) -> DemoRun:
    """`demo_args` go to `demo build` (e.g. a second seed with --vary, or --size); `tasks` limits the runs to some
    tasks; `models`: the baselines run (all at once, on one server)."""
    data = root / "data"
    env = pipeline_env(database_url)
    t0 = time.perf_counter()
    build_demo(data, demo_args, env)
    build_s = time.perf_counter() - t0
    with BaselineServer(env=measure_cache_env()) as server:
        models_file = root / "models.yaml"
        models_file.write_text("models:\n" + "".join(
            f"  - {{name: {m}, base_url: '{server.base_url}', model: {m}, audio_output: true, baseline: true,"
            f" timeout_s: 600}}\n" for m in models))
        t1 = time.perf_counter()
        runs = [subprocess.Popen([sys.executable, "-m", "eval_backend", "run", "--model", m, "--benchmark", "demo",
                                  "--models-file", str(models_file), "--data-dir", str(data), "--no-progress",
                                  "--concurrency", "4", "--max-attempts", "1",
                                  *(("--tasks", tasks) if tasks else ())],
                                 cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
                for m in models]
        outputs = [p.communicate(timeout=3000)[0].decode(errors="replace") for p in runs]
        run_s = time.perf_counter() - t1
        stats = server.stats()
    return DemoRun(data, stats, outputs, [p.returncode for p in runs], build_s, run_s, database_url)
