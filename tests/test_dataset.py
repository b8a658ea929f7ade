"""The project format: save -> load keeps content and hash; audio is materialised by content; bad audio flags."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from eval_backend.benchmark.dataset import (
    _canonical, audio_ref_from_file, content_hash, load_project_folder, save_benchmark,
)
from eval_backend.benchmark.model import (
    MCQ, AudioRef, Benchmark, ContextCase, ContextGroup, Script, SelectionItem, ToneCase, ToneGroup, Variant,
)

_freq = iter(range(300, 20000, 41))


def wav(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    t = np.arange(3200) / 16000
    sf.write(path, 0.3 * np.sin(2 * np.pi * next(_freq) * t).astype(np.float32), 16000)
    return path


def ref(path: Path) -> AudioRef:
    return audio_ref_from_file(path)


def make_benchmark(src: Path) -> Benchmark:
    """Every collection, a path-only ref (no sha yet), a missing clip and a corrupt one."""
    src.mkdir(parents=True, exist_ok=True)
    corrupt = src / "bad clip.wav"
    corrupt.write_bytes(b"RIFF....WAVE not really")
    bad = ref(corrupt)
    missing = AudioRef(str(src / "gone.wav"), None, "audio: gone.wav: cannot read")
    scripts = [
        Script("s1", "The train leaves at noon.", "sad", "travel", {
            "target": Variant("target", "sad", ref(wav(src / "s1 target.wav")), "Oh no, are you okay?"),
            "neutral": Variant("neutral", "neutral", AudioRef(str(wav(src / "s1 neutral.wav")))),  # path only
            "alternative": Variant("alternative", "happy", ref(wav(src / "s1 alt.wav"))),
        }),
        Script("s2", "It is raining.", "rain", "weather",
               {"target": Variant("target", "rain", bad)}, [bad.error]),
    ]
    mcqs = [MCQ("q1", "understanding", "speech emotion", scripts[0].variants["target"].audio, "Emotion?",
                ["happy", "sad"], "B", "s1", "target"),
            MCQ("q2", "reasoning", "speaker-intent recognition", missing, "Intent?", ["a", "b", "c"], "C",
                flags=[missing.error])]
    groups = [ContextGroup("c1", "I'm fine.", ref(wav(src / "c1.wav")),
                           [ContextCase("c1a", "Lost a job.", "I'm sorry."), ContextCase("c1b", "Got a prize.")],
                           "sad")]
    tones = [ToneGroup("t1", "The bus is late.", "Waiting outside.",
                       [ToneCase("t1a", "angry", ref(wav(src / "t1 a.wav"))),
                        ToneCase("t1b", "sad", ref(wav(src / "t1 b.wav")), "Hang in there.")])]
    sel = [SelectionItem("g_0_1", "g_0", "context", "Lost a job.", "I'm fine.", ref(wav(src / "u.wav")),
                         {"A": ref(wav(src / "r a.wav")), "B": ref(wav(src / "r b.wav"))}, "B",
                         {"A": "Cool.", "B": "I'm so sorry."}, "sad")]
    return Benchmark("unit", "1.2", scripts, mcqs, groups, tones, sel)


def test_round_trip_keeps_content_hash_and_flags(tmp_path):
    b = make_benchmark(tmp_path / "src")
    folder = save_benchmark(b, tmp_path / "bench")
    assert len(b.hash) == 64
    meta = json.loads((folder / "benchmark.json").read_text())
    assert meta["name"] == "unit" and meta["version"] == "1.2" and meta["hash"] == b.hash
    assert "datasets" in meta["created_with"]

    from datasets import Audio, load_from_disk
    dd = load_from_disk(str(folder / "hf"))
    assert set(dd) == {"scripts", "mcq", "context_groups", "tone_groups", "selection"}
    assert isinstance(dd["mcq"].features["audio"], Audio) and dd["mcq"].features["audio"].decode is False

    again = load_project_folder(folder)
    assert again.hash == b.hash == content_hash(again)
    assert _canonical(again) == _canonical(b)
    assert again.info() == b.info() and again.version == "1.2"
    assert sorted(again.flagged()) == sorted(b.flagged())
    assert {i for i, _ in again.flagged()} == {"s2", "q2"}
    assert again.selection[0].option_texts == {"A": "Cool.", "B": "I'm so sorry."}
    assert again.tone_groups[0].cases[1].reference_reply == "Hang in there."
    # The path-only ref got its sha (and was validated) before the hash was taken.
    assert again.scripts[0].variants["neutral"].audio.sha256 == b.scripts[0].variants["neutral"].audio.sha256
    # Originals lie outside the folder: audio is materialised by content under audio_cache/.
    for a in again.all_audio():
        if a.sha256:
            p = Path(a.path)
            assert p.parent == folder / "audio_cache" and p.name == f"{a.sha256}.wav"
            assert hashlib.sha256(p.read_bytes()).hexdigest() == a.sha256
    assert again.mcqs[1].audio.path is None and again.mcqs[1].audio.error
    bad = again.scripts[1].variants["target"].audio
    assert bad.path and bad.error and "cannot decode" in bad.error  # corrupt bytes kept, still flagged


def test_hash_ignores_paths_but_not_content(tmp_path):
    b = make_benchmark(tmp_path / "src")
    h = content_hash(b)
    moved = Benchmark(b.name, b.version, b.scripts, b.mcqs, b.context_groups, b.tone_groups, b.selection)
    moved.selection[0].audio = AudioRef("/elsewhere/u.wav", b.selection[0].audio.sha256)
    assert content_hash(moved) == h
    moved.selection[0].answer = "A"
    assert content_hash(moved) != h


def test_originals_inside_the_folder_are_reused_and_cache_regenerates(tmp_path):
    folder = tmp_path / "bench"
    b = make_benchmark(folder / "audio")
    save_benchmark(b, folder)
    again = load_project_folder(folder)
    target = again.scripts[0].variants["target"].audio
    assert target.path == str(folder / "audio" / "s1 target.wav")
    assert not (folder / "audio_cache" / f"{target.sha256}.wav").exists()
    # Without the originals the bytes in hf/ are enough.
    for p in (folder / "audio").glob("*.wav"):
        p.unlink()
    third = load_project_folder(folder)
    assert third.hash == b.hash
    t3 = third.scripts[0].variants["target"].audio
    assert t3.ok and Path(t3.path).parent == folder / "audio_cache"


def test_undeclared_corrupt_bytes_are_flagged_on_load(tmp_path):
    """A dataset whose writer did not notice a corrupt clip: the load flags it and goes on."""
    src = tmp_path / "src"
    junk = src / "junk.wav"
    junk.parent.mkdir(parents=True)
    junk.write_bytes(b"\x00\x01garbage" * 10)
    liar = AudioRef(str(junk), hashlib.sha256(junk.read_bytes()).hexdigest(), None)
    b = Benchmark("x", "1", mcqs=[MCQ("q", "understanding", "coarse", liar, "?", ["a", "b"], "A")])
    save_benchmark(b, tmp_path / "bench")
    again = load_project_folder(tmp_path / "bench")
    m = again.mcqs[0]
    assert not m.audio.ok and m.flags and "junk.wav" in m.flags[0]
    assert again.hash == b.hash


def test_not_a_benchmark_folder(tmp_path):
    (tmp_path / "benchmark.json").write_text("{}")
    with pytest.raises(ValueError, match="hf/"):
        load_project_folder(tmp_path)


def test_parquet_splits_as_pushed_to_the_hub(tmp_path):
    """push_to_hub writes data/<split>-*.parquet; collections differ in columns, so they are read per split."""
    from eval_backend.benchmark.dataset import from_dataset_dict, parquet_splits, to_dataset_dict

    b = make_benchmark(tmp_path / "src")
    save_benchmark(b, tmp_path / "bench")  # fills sha256 of path-only refs and the hash
    for name, ds in to_dataset_dict(b).items():
        ds.to_parquet(str(tmp_path / "repo" / "data" / f"{name}-00000-of-00001.parquet"))
    splits = parquet_splits(tmp_path / "repo")
    assert set(splits) == {"scripts", "mcq", "context_groups", "tone_groups", "selection"}
    again = from_dataset_dict(splits, tmp_path / "cache")
    assert again.hash == b.hash and again.info()["flagged"] == b.info()["flagged"] == 2
    assert all(Path(a.path).parent == tmp_path / "cache" for a in again.all_audio() if a.sha256)
