"""Loaders on fixture folders built here, in EchoMind's and EmpathyEval's layouts (names with spaces,
one missing and one corrupt clip each), plus the hf: offline rule and the info CLI."""
from __future__ import annotations

import json
import re
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from hypothesis import given, settings, strategies as st

from eval_backend.benchmark.dataset import save_benchmark
from eval_backend.benchmark.echomind import attribute_from_filename, normalise_attribute, parse_answer, parse_options
from eval_backend.benchmark.loaders import BenchmarkSpecError, load_benchmark

ROOT = Path(__file__).resolve().parent.parent
_freq = iter(range(200, 20000, 37))


def wav(path: Path, seconds: float = 0.2) -> str:
    """A real, distinct tone (distinct content -> distinct sha256)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    t = np.arange(int(16000 * seconds)) / 16000
    sf.write(path, 0.3 * np.sin(2 * np.pi * next(_freq) * t).astype(np.float32), 16000)
    return str(path)


def corrupt(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"RIFF\x10\x00\x00\x00WAVEfmt garbage that is not audio")


# ---------------------------------------------------------------- EchoMind fixture
def make_echomind(root: Path) -> Path:
    syn = root / "data_synthesis"
    a = syn / "audio"
    wav(a / "emotion" / "id_1001_happy_daily_life_target.wav")
    wav(a / "emotion" / "id_1001_happy_daily_life_neutral.wav")
    wav(a / "emotion" / "id_1001_sad_daily_life_alternative.wav")
    wav(a / "env" / "id_2471_sound of wind blowing_no_specific_topics_target.wav")
    wav(a / "env" / "id_2471_sound of wind blowing_no_specific_topics_neutral.wav")
    wav(a / "env" / "id_2471_heavy rain_no_specific_topics_alternative.wav")
    wav(a / "id_3001_elderly_health care_target.wav")
    corrupt(a / "id_3001_child_health care_alternative.wav")
    (syn / "MCQ").mkdir(parents=True)
    (syn / "script_info_paralinguistic.json").write_text(json.dumps([{
        "case_id": 1001, "spoken_info": "I finished the report this morning.", "topic": "daily_life",
        "target_audio_info": {"target_input_audio_file": "emotion/id_1001_happy_daily_life_target.wav",
                              "reference_reply": "That's great news!"},
        "neutral_audio_info": {"neutral_input_audio_file": "emotion/id_1001_happy_daily_life_neutral.wav"},
        "alternative_audio_info": {"alternative_input_audio_file": "emotion/id_1001_sad_daily_life_alternative.wav"},
        "alternative_response": "Oh, what happened?",  # a reply on the case rather than in the info dict
    }]))
    (syn / "script_info_environment.json").write_text(json.dumps([
        {"case_id": 2471, "spoken_info": "Let's take a walk to the pier.", "topic": "no_specific_topics",
         # a bare file name: found by name in a subfolder of audio/
         "target_audio_info": {"target_input_audio_file": "id_2471_sound of wind blowing_no_specific_topics_target.wav"},
         "neutral_audio_info": {"neutral_input_audio_file": "env/id_2471_sound of wind blowing_no_specific_topics_neutral.wav"},
         "alternative_audio_info": {"alternative_input_audio_file": "env/id_2471_heavy rain_no_specific_topics_alternative.wav",
                                    "alternative_attribute": "rain"}},
        {"case_id": 2472, "spoken_info": "Where is the station?", "topic": "travel",
         "target_audio_info": {"target_input_audio_file": "env/id_2472_ringtone_travel_target.wav"},  # missing
         "neutral_audio_info": {}, "alternative_audio_info": {}},
    ]))
    (syn / "script_info_speaker.json").write_text(json.dumps([{
        "case_id": 3001, "spoken_info": "Could you tell me the time?", "topic": "health care",
        "target_audio_info": {"target_input_audio_file": "id_3001_elderly_health care_target.wav"},
        "neutral_audio_info": None,
        "alternative_audio_info": {"alternative_input_audio_file": "id_3001_child_health care_alternative.wav"},  # corrupt
    }]))
    (syn / "MCQ" / "understanding.json").write_text(json.dumps([
        {"question_id": "u1", "audio_dir": "emotion", "audio_name": "id_1001_happy_daily_life_target.wav",
         "question": "What emotion?", "options_text": ["A. sad", "B. happy", "C. angry"], "answer": "B"},
        {"question_id": "u2", "audio_dir": "env", "audio_name": "id_2471_sound of wind blowing_no_specific_topics_target.wav",
         "question": "Background?", "options_text": {"A": "rain", "B": "car", "C": "wind"}, "label": "(C)"},
        {"question_id": "u3", "audio_dir": "", "audio_name": "id_3001_elderly_health care_target.wav",
         "question": "Age group?", "options_text": "A. child\nB. elderly\nC. adult", "gt": "elderly"},
    ]))
    (syn / "MCQ" / "reasoning.json").write_text(json.dumps([
        {"question_id": "r1", "audio_dir": "emotion", "audio_name": "id_1001_sad_daily_life_alternative.wav",
         "question": "Best reply?", "options_text": "A. Cheer up B. Congrats C. Whatever", "answer": "A. Cheer up"},
        {"question_id": "r2", "audio_dir": "emotion", "audio_name": "id_1001_happy_daily_life_neutral.wav",
         "question": "Intent?", "options_text": ["ask", "tell", "joke"], "answer": "D"},  # answer out of range
    ]))
    hum = root / "data_human"
    wav(hum / "audio" / "take 7" / "rec 0042.wav")  # no id_... pattern: the case's own label counts
    (hum / "script_info_paralinguistic.json").write_text(json.dumps([{
        "case_id": 1001, "spoken_info": "The meeting moved to Friday.", "topic": "work", "attribute": "Shouting",
        "target_audio_info": {"target_input_audio_file": "take 7/rec 0042.wav"},
    }]))
    return root


def test_echomind_counts_attributes_answers_and_flags(tmp_path):
    b = load_benchmark(f"echomind:{make_echomind(tmp_path / 'echo')}")
    scripts = {s.id: s for s in b.scripts}
    assert sorted(scripts) == ["data_human-1001", "data_synthesis-1001", "data_synthesis-2471",
                               "data_synthesis-2472", "data_synthesis-3001"]
    happy = scripts["data_synthesis-1001"]
    assert happy.attribute == "happy" and happy.text == "I finished the report this morning."
    assert {k: v.attribute for k, v in happy.variants.items()} == {"target": "happy", "neutral": "neutral",
                                                                    "alternative": "sad"}
    assert happy.variants["target"].reference_reply == "That's great news!"
    assert happy.variants["neutral"].reference_reply is None
    assert happy.variants["alternative"].reference_reply == "Oh, what happened?"
    assert all(v.audio.ok and Path(v.audio.path).is_file() for v in happy.variants.values()) and not happy.flags
    wind = scripts["data_synthesis-2471"]
    assert wind.attribute == "wind" and wind.dimension == "environment" and wind.topic == "no_specific_topics"
    assert wind.variants["alternative"].attribute == "rain" and wind.variants["target"].audio.ok
    assert scripts["data_human-1001"].attribute == "shout"
    assert scripts["data_human-1001"].variants["target"].attribute == "shout"

    missing = scripts["data_synthesis-2472"]
    assert list(missing.variants) == ["target"] and missing.attribute == "ringtone"
    assert not missing.variants["target"].audio.ok and "not found" in missing.variants["target"].audio.error
    assert missing.flags and "id_2472_ringtone_travel_target.wav" in missing.flags[0]
    elderly = scripts["data_synthesis-3001"]
    assert set(elderly.variants) == {"target", "alternative"} and elderly.attribute == "elderly"
    assert elderly.variants["target"].audio.ok
    assert elderly.variants["alternative"].audio.error and "cannot decode" in elderly.flags[0]

    assert b.attributes() == ["elderly", "happy", "ringtone", "shout", "wind"]
    info = b.info()
    assert info["scripts"] == 5 and info["variants"] == 3 + 3 + 1 + 2 + 1
    assert info["mcq"] == {"understanding": 3, "reasoning": 2}

    mcq = {m.id: m for m in b.mcqs}
    assert mcq["data_synthesis-u1"].options == ["sad", "happy", "angry"] and mcq["data_synthesis-u1"].answer == "B"
    assert mcq["data_synthesis-u1"].script_id == "data_synthesis-1001" and mcq["data_synthesis-u1"].variant == "target"
    assert mcq["data_synthesis-u2"].answer == "C" and mcq["data_synthesis-u2"].audio.ok
    assert mcq["data_synthesis-u3"].options == ["child", "elderly", "adult"] and mcq["data_synthesis-u3"].answer == "B"
    assert mcq["data_synthesis-r1"].options == ["Cheer up", "Congrats", "Whatever"] and mcq["data_synthesis-r1"].answer == "A"
    bad = mcq["data_synthesis-r2"]
    assert bad.answer == "" and bad.flags and "'D'" in bad.flags[0]
    flagged = dict(b.flagged())
    assert set(flagged) == {"data_synthesis-2472", "data_synthesis-3001", "data_synthesis-r2"}
    assert len(b.hash) == 64


def test_echomind_survives_save_and_load_with_same_hash(tmp_path):
    b = load_benchmark(f"echomind:{make_echomind(tmp_path / 'echo')}")
    out = save_benchmark(b, tmp_path / "saved")
    again = load_benchmark(str(out))
    assert again.hash == b.hash and again.info() == b.info()
    assert sorted(again.flagged()) == sorted(b.flagged())


def test_filename_and_option_parsing_rules():
    assert attribute_from_filename("id_2471_sound of wind blowing_no_specific_topics_target.wav",
                                   "no_specific_topics") == "sound of wind blowing"
    assert normalise_attribute("sound of wind blowing") == "wind"
    assert normalise_attribute("happy music") == "happy music" and normalise_attribute("Laughing") == "laughter"
    assert normalise_attribute("purple") == "purple"  # unknown labels are kept, not guessed
    assert parse_options("(A) yes (B) no") == ["yes", "no"]
    assert parse_answer("A dog barking", ["cat", "A dog barking"]) == "B"  # option text beats a letter reading
    with pytest.raises(ValueError):
        parse_answer("maybe", ["yes", "no"])
    with pytest.raises(ValueError):
        parse_options("just one line")


# ---------------------------------------------------------------- EmpathyEval fixture
def make_empathyeval(root: Path) -> Path:
    a = root / "audio"
    for name in ["giga 0.wav", "emo sam e1.wav", "emo sam e2.wav", "pod 7 a.wav", "pod 7 b.wav"]:
        wav(a / name)
    for i in range(10):
        wav(a / "replies" / f"reply {i}.wav")
    corrupt(a / "meld 183.wav")
    opts = lambda i, j: {"opt-A": f"audio/replies/reply {i}.wav", "opt-B": f"audio/replies/reply {j}.wav"}  # noqa: E731
    items = [
        {"question_id": "gigaspeech_0_1", "context": "They just lost their job.", "utterance": "I'm fine.",
         "utterance_audio": "audio/giga 0.wav", "response": "opt-B", "options": opts(0, 1)},
        {"question_id": "gigaspeech_0_2", "context": "They just got promoted.", "utterance": "I'm fine.",
         "utterance_audio": "audio/giga 0.wav", "response": "A", "options": opts(2, 3)},
        {"question_id": "emovdb_sam_e1", "context": "Reading a note aloud.", "utterance": "The bus is late.",
         "utterance_audio": "audio/emo sam e1.wav", "response": "opt-A", "options": opts(4, 5), "emotion": "amused"},
        {"question_id": "emovdb_sam_e2", "context": "Reading a note aloud.", "utterance": "The bus is late.",
         "utterance_audio": "audio/emo sam e2.wav", "response": "opt-B", "options": opts(5, 4), "emotion": "angry"},
        {"question_id": "meld_183_1", "context": "At a party.", "utterance": "Oh really?",
         "utterance_audio": "audio/meld 183.wav", "response": "opt-A",  # corrupt utterance
         "options": {**opts(6, 7), "opt-C": "audio/replies/reply 99.wav"}},  # a missing option file
    ]
    (root / "track1.json").write_text(json.dumps(items))
    # A second file, dict-shaped; same context + different voices: tone variation by rule 3.
    (root / "extra.json").write_text(json.dumps({
        "podcast_7_1": {"context": "Their cat is sick.", "utterance": "Okay.", "utterance_audio": "audio/pod 7 a.wav",
                        "response": "Opt-A", "options": opts(8, 9)},
        "podcast_7_2": {"context": "Their cat is sick.", "utterance": "Okay.", "utterance_audio": "audio/pod 7 b.wav",
                        "response": "opt-B", "options": opts(9, 8)},
    }))
    return root


def test_empathyeval_groups_kinds_answers_and_flags(tmp_path):
    b = load_benchmark(f"empathyeval:{make_empathyeval(tmp_path / 'ee')}")
    items = {it.id: it for it in b.selection}
    assert len(items) == 7 and b.info()["selection"] == 7
    assert {k: (v.group_id, v.kind) for k, v in items.items()} == {
        "gigaspeech_0_1": ("gigaspeech_0", "context"), "gigaspeech_0_2": ("gigaspeech_0", "context"),
        "emovdb_sam_e1": ("emovdb_sam", "tone"), "emovdb_sam_e2": ("emovdb_sam", "tone"),
        "meld_183_1": ("meld_183", "context"),
        "podcast_7_1": ("podcast_7", "tone"), "podcast_7_2": ("podcast_7", "tone"),
    }
    assert [items[k].answer for k in ("gigaspeech_0_1", "gigaspeech_0_2", "podcast_7_1")] == ["B", "A", "A"]
    g1 = items["gigaspeech_0_1"]
    assert g1.context == "They just lost their job." and g1.utterance_text == "I'm fine."
    assert g1.audio.ok and g1.audio.sha256 == items["gigaspeech_0_2"].audio.sha256
    assert sorted(g1.options) == ["A", "B"] and all(o.ok for o in g1.options.values())
    assert items["emovdb_sam_e2"].attribute == "angry"
    meld = items["meld_183_1"]
    assert sorted(meld.options) == ["A", "B", "C"] and not meld.options["C"].ok and not meld.audio.ok
    assert len(meld.flags) == 2 and any("reply 99.wav" in f for f in meld.flags)
    assert {i for i, _ in b.flagged()} == {"meld_183_1"}


def test_empathyeval_single_file_and_bad_answer(tmp_path):
    root = make_empathyeval(tmp_path / "ee")
    doc = json.loads((root / "track1.json").read_text())
    doc[0]["response"] = "opt-Z"
    (root / "track1.json").write_text(json.dumps(doc))
    b = load_benchmark(f"empathyeval:{root / 'track1.json'}")
    assert len(b.selection) == 5
    first = b.selection[0]
    assert first.answer == "" and "names no option" in first.flags[0]


def test_bad_specs_raise_clear_errors(tmp_path):
    with pytest.raises(BenchmarkSpecError, match="demo build"):
        load_benchmark("demo", data_dir=tmp_path)
    with pytest.raises(BenchmarkSpecError, match="unknown benchmark spec"):
        load_benchmark(str(tmp_path / "nope"))
    with pytest.raises(BenchmarkSpecError, match="no script_info"):
        load_benchmark(f"echomind:{tmp_path}")
    (tmp_path / "broken.json").write_text("{not json")
    with pytest.raises(BenchmarkSpecError, match="not readable JSON"):
        load_benchmark(f"empathyeval:{tmp_path / 'broken.json'}")


def test_hf_offline_fails_fast_with_a_clear_message(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    start = time.monotonic()
    with pytest.raises(BenchmarkSpecError, match="HF_HUB_OFFLINE is set"):
        load_benchmark("hf:someone-nonexistent/empathy-bench-xyz")
    assert time.monotonic() - start < 2.0


def _cli(*args: str, data_dir: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "EMPATHY_ARENA_DATA_DIR": str(data_dir)}
    return subprocess.run([sys.executable, "-m", "eval_backend", "benchmark", "info", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)


def test_info_cli_json_and_errors(tmp_path, capsys):
    root = make_empathyeval(tmp_path / "ee")
    ok = _cli(f"empathyeval:{root}", "--json", data_dir=tmp_path / "data")
    assert ok.returncode == 0, ok.stderr
    info = json.loads(ok.stdout)
    assert set(info) == {"name", "version", "hash", "scripts", "variants", "attributes", "mcq", "groups",
                         "selection", "flagged"}
    assert info["selection"] == 7 and info["flagged"] == 2 and info["mcq"] == {"understanding": 0, "reasoning": 0}
    # The readable table, in-process (one subprocess less).
    import argparse
    from eval_backend.benchmark import cli
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    assert cli.main(parser.parse_args(["info", f"empathyeval:{root}", "--flags"])) == 0
    table = capsys.readouterr().out
    assert re.search(r"^selection items +7$", table, re.M) and info["hash"] in table and "reply 99.wav" in table
    bad = _cli("demo", "--json", "--data-dir", str(tmp_path / "empty"), data_dir=tmp_path / "data")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1 and "demo build" in bad.stderr


def test_hf_spec_reads_the_local_hub_cache_when_offline(tmp_path):
    """Offline, hf:OWNER/NAME still loads a dataset already in the Hub cache (no network call)."""
    b = load_benchmark(f"empathyeval:{make_empathyeval(tmp_path / 'ee')}")
    repo = tmp_path / "hub" / "datasets--someone--bench"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("0123abcd")
    save_benchmark(b, repo / "snapshots" / "0123abcd")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(tmp_path / "hub"),
           "EMPATHY_ARENA_DATA_DIR": str(tmp_path / "data")}
    out = subprocess.run([sys.executable, "-m", "eval_backend", "benchmark", "info", "hf:someone/bench", "--json"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    info = json.loads(out.stdout)
    assert info["hash"] == b.hash and info["selection"] == 7 and info["groups"] == {"context": 0, "tone": 0}


_option = st.text(alphabet=st.sampled_from(list("abcxyzABCDE .,!?'-0123")), min_size=1, max_size=20).map(str.strip) \
    .filter(bool)


@settings(max_examples=150, deadline=None)
@given(st.lists(_option, min_size=2, max_size=6))
def test_options_survive_every_written_shape(texts):
    """Lettered lines, a list with or without letters, and a letter-keyed dict all give the texts back in order."""
    letters = "ABCDEFGH"
    assert parse_options("\n".join(f"{letters[i]}. {t}" for i, t in enumerate(texts))) == texts
    assert parse_options([f"({letters[i]}) {t}" for i, t in enumerate(texts)]) == texts
    assert parse_options({f"opt-{letters[i]}": t for i, t in enumerate(reversed(texts))}) == list(reversed(texts))
    answer = len(texts) - 1
    assert parse_answer(letters[answer], texts) == letters[answer]
    # By text (a bare letter such as "C" reads as a letter, so those are left out here).
    if not re.fullmatch(r"\(?[A-Ha-h]\)?\.?", texts[answer]):
        assert texts[ord(parse_answer(texts[answer], texts)) - 65].lower() == texts[answer].lower()


def test_hf_subfolder_in_echomind_layout_from_the_cache(tmp_path, monkeypatch):
    """hf:OWNER/NAME/SUBFOLDER reads one folder of a cached repo, here in EchoMind's own layout."""
    from huggingface_hub import constants
    repo = tmp_path / "hub" / "datasets--hlt-cuhksz--EchoMind"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("feedbeef")
    make_echomind(repo / "snapshots" / "feedbeef")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    b = load_benchmark("hf:hlt-cuhksz/EchoMind/data_synthesis", data_dir=tmp_path / "data")
    assert b.source == "hf:hlt-cuhksz/EchoMind/data_synthesis"
    assert len(b.scripts) == 4 and "1001" in {s.id for s in b.scripts}  # one subset: no id prefix
    with pytest.raises(BenchmarkSpecError, match="no folder 'data_nothing'"):
        load_benchmark("hf:hlt-cuhksz/EchoMind/data_nothing", data_dir=tmp_path / "data")


def test_deep_json_gives_a_clear_error_not_a_traceback(tmp_path):
    """JSON nested 5,000 deep once raised RecursionError out of both loaders; now a one-line error."""
    deep = "[" * 5000 + "]" * 5000
    ee = tmp_path / "ee"
    ee.mkdir()
    (ee / "deep.json").write_text(deep)
    with pytest.raises(BenchmarkSpecError, match="nests 5000 levels deep; the limit is 64"):
        load_benchmark(f"empathyeval:{ee / 'deep.json'}")
    root = make_echomind(tmp_path / "em")
    info = root / "data_synthesis" / "script_info_paralinguistic.json"
    info.write_text('{"cases": ' + deep + "}")
    with pytest.raises(BenchmarkSpecError, match="script_info_paralinguistic.json: not readable JSON .*nests 5001"):
        load_benchmark(f"echomind:{root}")
    folder = tmp_path / "folder"
    save_benchmark(load_benchmark(f"empathyeval:{make_empathyeval(tmp_path / 'ee2')}"), folder)
    (folder / "benchmark.json").write_text(deep)
    with pytest.raises(BenchmarkSpecError, match="nests 5000 levels deep"):
        load_benchmark(str(folder))
