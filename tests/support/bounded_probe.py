"""Runs submitted-endpoint work in a process of its own and reports how much memory it grew: the worker
(`worker`) or the web process's Check/Submit preflight (`check`), one case at a time.

    python tests/support/bounded_probe.py CONFIG.json      # prints one JSON line per case

CONFIG: {"mode": "worker" | "check", "data": DIR, "base_url": URL, "warm_bench": FOLDER,
         "settings": {SubmissionSettings fields}, "cases": [{"name", "bench": FOLDER, "settings": {...},
         "stream": bool, "api_key": str}]}

Memory: after a warm-up call (imports, first-use allocations), the peak RSS is reset (`/proc/self/clear_refs`
← 5 resets VmHWM) before each case; growth = VmHWM after the case − VmRSS before it, so any transient
peak inside the case counts.
"""
from __future__ import annotations

import asyncio
import gc
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from eval_backend.store import Store  # noqa: E402
from eval_backend.submissions import SubmissionForm, SubmissionService, SubmissionSettings, Submitter  # noqa: E402
from eval_backend.submissions.worker import Worker  # noqa: E402

OPERATOR = Submitter("op", is_operator=True)


def status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


def reset_peak() -> None:
    gc.collect()
    Path("/proc/self/clear_refs").write_text("5")


def form(name: str, base_url: str, api_key: str = "") -> SubmissionForm:
    return SubmissionForm(name=name, base_url=base_url, model_id="fault", audio_output=True, voice="v",
                          licence="apache-2.0", open_weights=True, api_key=api_key)


def warm_up(cfg: dict, settings: SubmissionSettings, store: Store) -> None:
    """One good preflight and one good job: every import and first-use allocation happens here."""
    svc = SubmissionService(store, settings.with_(benchmark=cfg["warm_bench"]))
    out = svc.submit(form("warm-check", cfg["base_url"]), OPERATOR, dry_run=True)
    assert out.accepted, out.errors
    if cfg["mode"] == "worker":
        svc = SubmissionService(store, settings.with_(benchmark=cfg["warm_bench"], preflight=False))
        assert svc.submit(form("warm-job", cfg["base_url"]), OPERATOR).accepted
        job = Worker(store, svc.settings).run_once()
        assert job and job.state in ("FINISHED", "FAILED"), job


def stream_case(cfg: dict, case: dict, settings: SubmissionSettings, store: Store) -> dict:
    """An operator's streaming model (stream: true) through the runner with the same reply limits."""
    from eval_backend.benchmark.loaders import load_benchmark
    from eval_backend.config import ModelSpec
    from eval_backend.runner import RetryPolicy, run_model
    bench = load_benchmark(case["bench"], store.root)
    spec = ModelSpec(name=case["name"], base_url=cfg["base_url"], model="fault", audio_output=True, stream=True,
                     timeout_s=settings.call_timeout_s)
    summary = asyncio.run(run_model(spec, bench, store, settings.concurrency, progress=False,
                                    policy=RetryPolicy(max_attempts=settings.max_attempts),
                                    limits=settings.reply_limits()))
    return {"state": "RUN", "error_class": None, "summary": summary.line()}


def run_case(cfg: dict, case: dict, base: SubmissionSettings, store: Store) -> dict:
    settings = base.with_(benchmark=case["bench"], **case.get("settings", {}))
    reset_peak()
    rss0 = status_kib("VmRSS")
    t0 = time.monotonic()
    out: dict = {"name": case["name"]}
    if case.get("stream"):
        out.update(stream_case(cfg, case, settings, store))
    elif cfg["mode"] == "check":
        svc = SubmissionService(store, settings)
        result = svc.submit(form(case["name"], cfg["base_url"], case.get("api_key", "")),
                            Submitter(case["name"]), dry_run=True)
        out.update(accepted=result.accepted, errors=result.errors)
    else:
        svc = SubmissionService(store, settings.with_(preflight=False))
        result = svc.submit(form(case["name"], cfg["base_url"], case.get("api_key", "")), OPERATOR)
        assert result.accepted, result.errors
        job = Worker(store, settings).run_once()
        out.update(state=job.state, error_class=job.error_class, error_message=job.error_message)
    out["elapsed_s"] = round(time.monotonic() - t0, 2)
    out["growth_mib"] = round((status_kib("VmHWM") - rss0) / 1024, 1)
    out["rss_mib"] = round(rss0 / 1024, 1)
    if cfg["mode"] == "worker" or case.get("stream"):
        out["replies"] = {r.request_id: [r.status, r.error_class, r.error_message, r.text, r.transcript, r.raw]
                          for r in store.replies(model=case["name"])}
    return out


def main(path: str) -> int:
    cfg = json.loads(Path(path).read_text())
    store = Store(cfg["data"])
    settings = SubmissionSettings(**{k: tuple(v) if isinstance(v, list) else v for k, v in cfg["settings"].items()})
    warm_up(cfg, settings, store)
    for case in cfg["cases"]:
        print(json.dumps(run_case(cfg, case, settings, store)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
