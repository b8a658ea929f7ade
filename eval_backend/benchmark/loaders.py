"""`load_benchmark(spec)`: one string selects where a benchmark comes from.

    demo                 <data_dir>/benchmarks/demo (project format; built by `python -m eval_backend demo build`)
    PATH                 a local folder in the project format (or, detected, an EchoMind / EmpathyEval copy)
    hf:OWNER/NAME[/DIR]  a Hub dataset repo (or one folder of it): the project format, EchoMind's layout, or
                         parquet splits (push_to_hub)
    echomind:PATH        EchoMind's published layout (eval_backend/benchmark/echomind.py)
    empathyeval:PATH     EmpathyEval JSON items (eval_backend/benchmark/empathyeval.py)

Schemes are the `LOADERS` mapping (scheme -> reader). Every problem with the spec itself raises
BenchmarkSpecError with a one-line message; a bad audio file only flags its item.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .. import config
from .dataset import SPLITS, from_dataset_dict, is_project_folder, load_project_folder, parquet_splits
from .demo import build_demo
from .echomind import find_subsets, load_echomind
from .empathyeval import load_empathyeval
from .model import Benchmark

DEMO_NAME = "demo"
_TRUE = {"1", "true", "yes", "on"}


class BenchmarkSpecError(ValueError):
    """The spec cannot be loaded; the message says why and what to do."""


def hub_offline() -> bool:
    """HF_HUB_OFFLINE read now (the env may change after huggingface_hub was imported) or as the library saw it."""
    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in _TRUE:
        return True
    try:
        from huggingface_hub import constants
    except ImportError:
        return False
    return bool(getattr(constants, "HF_HUB_OFFLINE", False))


def hub_cache_dir() -> Path:
    """The Hub cache, resolved like huggingface_hub does, without importing it (that import alone takes ~1 s)."""
    hub = sys.modules.get("huggingface_hub.constants")
    if hub is not None and getattr(hub, "HF_HUB_CACHE", None):
        return Path(hub.HF_HUB_CACHE)
    env = os.environ
    if env.get("HF_HUB_CACHE") or env.get("HUGGINGFACE_HUB_CACHE"):
        return Path(env.get("HF_HUB_CACHE") or env["HUGGINGFACE_HUB_CACHE"]).expanduser()
    home = env.get("HF_HOME") or os.path.join(env.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"),
                                              "huggingface")
    return Path(home).expanduser() / "hub"


def demo_folder(data_dir: str | os.PathLike | None = None) -> Path:
    return config.data_dir(data_dir) / "benchmarks" / DEMO_NAME


def load_demo(data_dir=None, build: bool = False, seed: int = 0) -> Benchmark:
    folder = demo_folder(data_dir)
    if not is_project_folder(folder):
        if not build:
            raise BenchmarkSpecError(
                f"the demo benchmark is not built yet ({folder} is missing): "
                f"run `python -m eval_backend demo build` first")
        build_demo(folder, seed)
    return load_project_folder(folder)


def _load_local(path: Path) -> Benchmark:
    """A plain path: the project format, or a recognised foreign layout."""
    if is_project_folder(path):
        return load_project_folder(path)
    if path.is_dir():
        if find_subsets(path):
            return load_echomind(path)
        if (path / "dataset_dict.json").is_file():  # a bare save_to_disk folder
            from datasets import load_from_disk
            b = from_dataset_dict(load_from_disk(str(path)), path / "audio_cache", root=path, name=path.name)
            b.source = str(path)
            return b
    if path.suffix == ".json" and path.is_file():
        return load_empathyeval(path)
    raise BenchmarkSpecError(
        f"{path}: not a benchmark folder (needs benchmark.json + hf/); "
        f"use echomind:PATH or empathyeval:PATH for those layouts")


def _offline_message(repo_id: str) -> str:
    return (f"hf:{repo_id}: HF_HUB_OFFLINE is set and the dataset is not in the local Hugging Face cache; "
            f"unset HF_HUB_OFFLINE to download it, or pass a local folder")


def load_hub(repo_id: str, data_dir=None, revision: str | None = None) -> Benchmark:
    """A Hub dataset repo, or one folder of it (hf:OWNER/NAME/SUBFOLDER downloads only that folder, e.g.
    hf:hlt-cuhksz/EchoMind/data_human). With HF_HUB_OFFLINE set only the local cache is tried."""
    parts = [p for p in (repo_id or "").split("/") if p]
    if len(parts) < 2:
        raise BenchmarkSpecError(f"hf:{repo_id}: expected hf:OWNER/NAME or hf:OWNER/NAME/SUBFOLDER")
    spec_text, repo_id, sub = repo_id, "/".join(parts[:2]), "/".join(parts[2:])
    offline = hub_offline()
    if offline and not (hub_cache_dir() / f"datasets--{repo_id.replace('/', '--')}").is_dir():
        raise BenchmarkSpecError(_offline_message(repo_id))  # decided before any import or network call
    try:
        from huggingface_hub import snapshot_download
        from huggingface_hub.errors import LocalEntryNotFoundError
    except ImportError as exc:
        raise BenchmarkSpecError(f"hf:{repo_id}: huggingface_hub is not installed ({exc})") from None
    try:
        local = Path(snapshot_download(repo_id, repo_type="dataset", revision=revision, local_files_only=offline,
                                       allow_patterns=[f"{sub}/*"] if sub else None))
    except LocalEntryNotFoundError:
        if offline:
            raise BenchmarkSpecError(_offline_message(repo_id)) from None
        raise BenchmarkSpecError(f"hf:{repo_id}: could not reach the Hub to download it") from None
    except Exception as exc:  # repo not found, gated, HTTP errors: one line for the user
        raise BenchmarkSpecError(f"hf:{repo_id}: cannot download ({type(exc).__name__}: {str(exc).splitlines()[0]})") from None
    commit = local.name  # snapshots/<commit>
    if sub:
        local = local / sub
        if not local.is_dir():
            raise BenchmarkSpecError(f"hf:{spec_text}: the repo has no folder {sub!r}")
    try:
        b = _load_local(local)
    except BenchmarkSpecError:
        # Parquet splits in the project schema (push_to_hub). Read with pyarrow: the collections have different
        # columns, which one `load_dataset` config cannot hold.
        splits = parquet_splits(local)
        if not splits:
            raise BenchmarkSpecError(
                f"hf:{spec_text}: no benchmark.json + hf/, EchoMind layout or parquet splits named "
                f"{', '.join(SPLITS)} in the repo") from None
        cache = config.data_dir(data_dir) / "cache" / "hub" / spec_text.replace("/", "__")
        b = from_dataset_dict(splits, cache, name=parts[-1], version=f"hub@{commit[:12]}")
    b.source = f"hf:{spec_text}"
    return b


def _read_echomind(rest: str, data_dir) -> Benchmark:
    return load_echomind(rest)


def _read_empathyeval(rest: str, data_dir) -> Benchmark:
    return load_empathyeval(rest)


@dataclass(frozen=True)
class Loader:
    read: Callable[[str, str | os.PathLike | None], Benchmark]   # (the spec after "scheme:", data dir) -> Benchmark
    usage: str                                                   # how the spec is written, for messages


# scheme -> reader of "scheme:REST" specs. Adding a benchmark layout = one entry here (and its reader module).
# `demo` and plain paths are not schemes: `demo` is a name, a path is what every other spec is.
LOADERS: dict[str, Loader] = {
    "hf": Loader(load_hub, "hf:OWNER/NAME"),
    "echomind": Loader(_read_echomind, "echomind:PATH"),
    "empathyeval": Loader(_read_empathyeval, "empathyeval:PATH"),
}


def _scheme(spec: str) -> tuple[Loader, str] | None:
    scheme, sep, rest = spec.partition(":")
    loader = LOADERS.get(scheme) if sep else None
    return (loader, rest) if loader else None


def load_benchmark(spec: str, data_dir: str | os.PathLike | None = None, build: bool = False) -> Benchmark:
    """Load the benchmark `spec` names (see the module doc)."""
    spec = (spec or "").strip()
    if not spec:
        usages = [DEMO_NAME, "a folder"] + [loader.usage for loader in LOADERS.values()]
        raise BenchmarkSpecError(f"empty benchmark spec: use {', '.join(usages[:-1])} or {usages[-1]}")
    try:
        if spec == DEMO_NAME:
            b = load_demo(data_dir, build=build)
        elif (found := _scheme(spec)) is not None:
            loader, rest = found
            b = loader.read(rest, data_dir)
        else:
            path = Path(spec).expanduser()
            if not path.exists():
                raise BenchmarkSpecError(
                    f"unknown benchmark spec {spec!r}: not {DEMO_NAME}, "
                    f"{', '.join(scheme + ':' for scheme in LOADERS)} nor an existing path")
            b = _load_local(path)
    except BenchmarkSpecError:
        raise
    except (ValueError, OSError) as exc:  # the readers' own clear messages, kept to one line
        raise BenchmarkSpecError(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None
    b.source = spec  # the string it was loaded from, as the model documents
    return b
