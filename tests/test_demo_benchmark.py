"""The demo benchmark, built for real (espeak-ng + signal processing), checked by listening to it
with the acoustic features: every target variant must carry its attribute measurably, compared
with its own neutral variant."""
import json
import math
import shutil
from collections import Counter
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

from eval_backend.audio.features import extract
from eval_backend.audio.io import read_wav
from eval_backend.audio.recipes import render
from eval_backend.audio.synth import rng_for
from eval_backend.benchmark import demo
from eval_backend.benchmark.model import (
    ATTRIBUTES, DIMENSIONS, OPTION_LETTERS, REASONING_TYPES, SELECTION_KINDS, UNDERSTANDING_TYPES,
)

pytestmark = [pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="espeak-ng not installed"),
              pytest.mark.slow]   # builds the whole demo once (~20-40 s on 2 cores)

EMOTION_WORDS = {"happy", "sad", "angry", "upset", "love", "hate", "afraid", "scared", "excited", "terrible",
                 "wonderful", "cry", "crying", "furious", "glad", "sorry", "awful", "great", "worried"}


@pytest.fixture(scope="session")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo")
    return demo.build_demo(out, seed=0), out


@lru_cache(maxsize=None)
def feats(path):
    return extract(*read_wav(path))


def fv(script, variant):
    return feats(script.variants[variant].audio.path)


# attribute -> (what must hold, target features t vs neutral features n)
CHECKS = {
    "male": lambda t, n: t.pitch_median_hz < 0.92 * n.pitch_median_hz,
    "female": lambda t, n: t.pitch_median_hz > 1.5 * n.pitch_median_hz,
    "child": lambda t, n: t.pitch_median_hz > 2.0 * n.pitch_median_hz,
    "elderly": lambda t, n: (t.pitch_median_hz < 0.92 * n.pitch_median_hz
                             and t.pitch_tremor_st > n.pitch_tremor_st + 0.3
                             and t.speaking_rate < n.speaking_rate),
    "fast": lambda t, n: t.speaking_rate > 1.25 * n.speaking_rate and t.duration_s < n.duration_s,
    "slow": lambda t, n: t.speaking_rate < 0.8 * n.speaking_rate and t.duration_s > n.duration_s,
    "shout": lambda t, n: (t.active_level_dbfs > n.active_level_dbfs + 6
                           and t.spectral_centroid_hz > 1.3 * n.spectral_centroid_hz),
    "whisper": lambda t, n: t.voiced_fraction < 0.1 < 0.5 < n.voiced_fraction and t.pitch_median_hz is None,
    "sobbing": lambda t, n: t.pitch_tremor_st > n.pitch_tremor_st + 0.4,
    "happy": lambda t, n: (t.pitch_median_hz > 1.15 * n.pitch_median_hz
                           and t.spectral_centroid_hz > n.spectral_centroid_hz),
    "sad": lambda t, n: (t.pitch_median_hz < 0.9 * n.pitch_median_hz
                         and t.active_level_dbfs < n.active_level_dbfs - 3
                         and t.speaking_rate < n.speaking_rate),
    "angry": lambda t, n: (t.active_level_dbfs > n.active_level_dbfs + 3
                           and t.spectral_centroid_hz > 1.5 * n.spectral_centroid_hz),
    "surprise": lambda t, n: t.pitch_median_hz > 1.3 * n.pitch_median_hz,
    "hoarse": lambda t, n: t.hnr_db < n.hnr_db - 3,
    "breathless": lambda t, n: t.hnr_db < n.hnr_db - 2 and t.voiced_fraction < n.voiced_fraction - 0.1,
    "vocal fatigue": lambda t, n: (t.active_level_dbfs < n.active_level_dbfs - 3
                                   and t.pitch_median_hz < n.pitch_median_hz),
    "cough": lambda t, n: t.duration_s > n.duration_s + 0.5,
    "sigh": lambda t, n: t.duration_s > n.duration_s + 0.8,
    "laughter": lambda t, n: t.duration_s > n.duration_s + 0.6,
    "yawn": lambda t, n: t.duration_s > n.duration_s + 1.0,
}


def env_check(t, n):
    """A background lowers the estimated SNR a lot, while the speech itself is still there."""
    return (t.snr_db < n.snr_db - 20 and t.pitch_median_hz is not None
            and abs(math.log(t.pitch_median_hz / n.pitch_median_hz)) < math.log(1.2))


def check_for(attribute):
    return env_check if ATTRIBUTES[attribute][0] == "environment" else CHECKS[attribute]


def test_every_recipe_has_a_presence_check():
    for attribute in demo.RECIPES:
        assert attribute in ATTRIBUTES
        assert check_for(attribute) is not None
        assert demo.ALTERNATIVE[attribute] in demo.RECIPES and demo.ALTERNATIVE[attribute] != attribute


def test_each_target_variant_carries_its_attribute(built):
    bench, _ = built
    failures = []
    for s in bench.scripts:
        t, n = fv(s, "target"), fv(s, "neutral")
        if not check_for(s.attribute)(t, n):
            failures.append((s.id, s.attribute, t, n))
    assert not failures, "\n".join(f"{sid} {a}:\n  target {t}\n  neutral {n}" for sid, a, t, n in failures)


def test_alternative_variants_carry_theirs_too(built):
    bench, _ = built
    failures = [(s.id, s.variants["alternative"].attribute) for s in bench.scripts
                if not check_for(s.variants["alternative"].attribute)(fv(s, "alternative"), fv(s, "neutral"))]
    assert not failures


def test_speaker_pitch_order(built):
    bench, _ = built
    by_attr = {}
    for s in bench.scripts:
        for v in s.variants.values():
            if v.attribute in ("child", "female", "male", "elderly"):
                by_attr.setdefault(v.attribute, []).append(feats(v.audio.path).pitch_median_hz)
    high = min(by_attr["child"] + by_attr["female"])
    low = max(by_attr["male"] + by_attr["elderly"])
    assert high > 1.8 * low


def test_structure_of_scripts(built):
    bench, _ = built
    assert len(bench.scripts) >= 40
    attrs = bench.attributes()
    assert len(attrs) >= 12 and all(a in ATTRIBUTES for a in attrs)
    assert {ATTRIBUTES[a][0] for a in attrs} == set(DIMENSIONS)
    for s in bench.scripts:
        assert set(s.variants) == {"target", "neutral", "alternative"}
        assert s.variants["target"].attribute == s.attribute
        assert s.variants["neutral"].attribute == "neutral"
        assert s.variants["alternative"].attribute not in (s.attribute, "neutral")
        assert s.topic and s.text and not s.flags
        assert not EMOTION_WORDS & set(s.text.lower().strip(".").split()), s.text
        assert all(v.reference_reply and v.audio.ok for v in s.variants.values())
        # the neutral reply is the plain one; an empathetic target reply adds to it
        assert s.variants["target"].reference_reply.endswith(s.variants["neutral"].reference_reply)


def test_mcqs_cover_types_and_spread_answers(built):
    bench, _ = built
    und = [m for m in bench.mcqs if m.level == "understanding"]
    rea = [m for m in bench.mcqs if m.level == "reasoning"]
    assert {m.type for m in und} == set(UNDERSTANDING_TYPES)
    assert {m.type for m in rea} == set(REASONING_TYPES)
    assert len({m.id for m in bench.mcqs}) == len(bench.mcqs)
    audio = {v.audio.path for s in bench.scripts for v in s.variants.values()}
    for m in bench.mcqs:
        assert 2 <= len(m.options) <= 4 and len(set(m.options)) == len(m.options)
        assert m.answer in OPTION_LETTERS[: len(m.options)]
        assert m.audio.path in audio
    positions = Counter(m.answer for m in bench.mcqs if len(m.options) == 4)
    total = sum(positions.values())
    assert set(positions) == set("ABCD") and max(positions.values()) < 0.3 * total


def test_fine_mcq_answers_match_the_audio(built):
    bench, _ = built
    scripts = {s.id: s for s in bench.scripts}
    for m in bench.mcqs:
        if m.level == "understanding" and m.type in ("speaking pace", "gender"):
            v = scripts[m.script_id].variants[m.variant]
            right = m.options[OPTION_LETTERS.index(m.answer)]
            expected = {"neutral": "normal"}.get(v.attribute, v.attribute)
            assert right == expected


def test_context_and_tone_groups(built):
    bench, _ = built
    assert len(bench.context_groups) >= 10 and len(bench.tone_groups) >= 10
    for g in bench.context_groups:
        assert 2 <= len(g.cases) <= 3 and g.audio.ok
        assert len({c.context for c in g.cases}) == len(g.cases)
        assert len({c.reference_reply for c in g.cases}) == len(g.cases)
    for g in bench.tone_groups:
        assert 2 <= len(g.cases) <= 4
        assert len({c.tone for c in g.cases}) == len(g.cases)
        assert len({c.audio.sha256 for c in g.cases}) == len(g.cases)
        assert len({c.reference_reply for c in g.cases}) == len(g.cases)


def test_tone_cases_sound_like_their_tone(built):
    bench, _ = built
    for g in bench.tone_groups:
        f = {c.tone: feats(c.audio.path) for c in g.cases}
        if "happy" in f and "sad" in f:
            assert f["happy"].pitch_median_hz > 1.3 * f["sad"].pitch_median_hz
        if "angry" in f and "neutral" in f:
            assert f["angry"].active_level_dbfs > f["neutral"].active_level_dbfs + 3
        if "sobbing" in f and "neutral" in f:
            assert f["sobbing"].pitch_tremor_st > f["neutral"].pitch_tremor_st + 0.4


def test_selection_items_hide_a_prosody_mismatch(built):
    bench, _ = built
    items = bench.selection
    assert len(items) >= 20 and {it.kind for it in items} == set(SELECTION_KINDS)
    groups = Counter(it.group_id for it in items)
    assert all(n >= 2 for n in groups.values())
    answers = Counter(it.answer for it in items)
    assert set(answers) == set("ABC") and max(answers.values()) <= min(answers.values()) + 1
    for it in items:
        assert 2 <= len(it.options) <= 3 and it.answer in it.options and it.audio.ok
        right_text = it.option_texts[it.answer]
        twins = [k for k in it.options if k != it.answer and it.option_texts[k] == right_text]
        assert len(twins) == 1, it.id          # the same words ...
        r, w = feats(it.options[it.answer].path), feats(it.options[twins[0]].path)
        # ... in a delivery that differs clearly in pace or pitch
        assert (abs(math.log(w.speaking_rate / r.speaking_rate)) > math.log(1.25)
                or abs(math.log(w.pitch_median_hz / r.pitch_median_hz)) > math.log(1.3)), it.id


def test_gentle_reply_is_slower_and_lower_than_cheerful_mismatch(built):
    bench, _ = built
    for it in bench.selection:
        if it.kind == "tone" and it.attribute in ("sad", "sobbing"):
            right = feats(it.options[it.answer].path)
            twin = next(k for k in it.options if k != it.answer and it.option_texts[k] == it.option_texts[it.answer])
            wrong = feats(it.options[twin].path)
            assert right.speaking_rate < wrong.speaking_rate and right.pitch_median_hz < wrong.pitch_median_hz


def test_saved_in_project_format(built):
    bench, out = built
    meta = json.loads((out / "benchmark.json").read_text())
    assert meta["name"] == "demo" and meta["version"] == "demo-1.0+seed0"
    assert meta["hash"] == bench.hash and len(bench.hash) == 64
    from eval_backend.benchmark.dataset import load_project_folder
    loaded = load_project_folder(out)
    assert loaded.hash == bench.hash
    assert loaded.info()["selection"] == len(bench.selection)


def test_clips_are_reproducible_from_the_seed():
    recipe = demo.RECIPES["crowd chatter"]
    a = render("The bus leaves at nine.", recipe, rng_for(0, "k"))
    b = render("The bus leaves at nine.", recipe, rng_for(0, "k"))
    c = render("The bus leaves at nine.", recipe, rng_for(1, "k"))
    assert np.array_equal(a, b) and not np.array_equal(a, c)


def test_seed_changes_assignment_and_answers(tmp_path, monkeypatch):
    """Plan both seeds without rendering: the seed moves attributes and right letters."""
    def plan(seed):
        clips = demo._Clips(tmp_path, seed)
        scripts, mcqs = demo._scripts(clips, seed)
        return [s.attribute for s in scripts], [m.answer for m in mcqs]
    a0, m0 = plan(0)   # (the letters are balanced later, in build_demo, from the seed's start)
    a1, m1 = plan(1)
    assert a0 != a1 and m0 != m1 and plan(0) == (a0, m0)


def test_cli_rejects_a_negative_seed(tmp_path, capsys):
    import argparse
    parser = argparse.ArgumentParser()
    demo.add_arguments(parser)
    args = parser.parse_args(["build", "--seed", "-1", "--out", str(tmp_path / "d")])
    assert demo.main(args) == 2
    assert "--seed" in capsys.readouterr().err and not (tmp_path / "d").exists()


def test_missing_espeak_is_a_clear_error_and_writes_nothing(tmp_path, monkeypatch, capsys):
    import argparse
    from eval_backend.audio import synth
    monkeypatch.setattr(synth, "ESPEAK", "espeak-ng-not-here")
    parser = argparse.ArgumentParser()
    demo.add_arguments(parser)
    assert demo.main(parser.parse_args(["build", "--out", str(tmp_path / "d")])) == 2
    assert "espeak-ng is not installed" in capsys.readouterr().err
    assert not (tmp_path / "d").exists()


def test_always_picking_the_plain_answer_is_no_better_than_chance(built):
    """'normal pace', 'nothing but the speaker'... are right for neutral variants only; a model that
    always picks them (without listening) must not beat guessing."""
    bench, _ = built
    from eval_backend.benchmark import demo_content as C
    plain = {C.DESCRIPTIONS[v] for v in demo.NEUTRAL_ANSWER.values()}
    fine = [m for m in bench.mcqs if m.type in demo.NEUTRAL_ANSWER]
    assert all(any(o in plain for o in m.options) for m in fine)
    hits = sum(m.options[OPTION_LETTERS.index(m.answer)] in plain for m in fine)
    chance = sum(1 / len(m.options) for m in fine)
    assert 0 < hits <= chance


def test_the_compact_demo_is_a_slice_of_the_full_one(built, tmp_path):
    """The Space's embedded default (EMPATHY_ARENA_DEMO_SIZE=compact): one script per listed cue, the first groups,
    the very same words and clips as the full build, and a version and hash of its own."""
    from eval_backend.tasks import SPOKEN_TASKS, build_requests
    full, _ = built
    small = demo.build_demo(tmp_path / "compact", seed=0, size="compact")
    size = demo.DEMO_SIZES["compact"]
    assert sorted(s.attribute for s in small.scripts) == sorted(size.attributes)
    by_id = {s.id: s for s in full.scripts}
    for s in small.scripts:
        twin = by_id[s.id]
        assert (s.text, s.attribute) == (twin.text, twin.attribute)
        assert {k: v.audio.sha256 for k, v in s.variants.items()} == \
               {k: v.audio.sha256 for k, v in twin.variants.items()}
        assert s.id == min(f.id for f in full.scripts if f.attribute == s.attribute)
    assert [g.id for g in small.context_groups] == [g.id for g in full.context_groups[:size.context_groups]]
    assert [g.id for g in small.tone_groups] == [g.id for g in full.tone_groups[:size.tone_groups]]
    spoken = build_requests(small, SPOKEN_TASKS)
    assert len(spoken) == 70 and len(spoken) * 2.9 < len(build_requests(full, SPOKEN_TASKS)) == 208
    assert {r.id for r in spoken} < {r.id for r in build_requests(full, SPOKEN_TASKS)}
    assert small.version == "demo-1.0+seed0+compact" and small.hash != full.hash
    assert {Path(r.path).name for r in _refs(small) if r is not None} == {p.name for p in (tmp_path / "compact" / "audio").glob("*.wav")}
    with pytest.raises(ValueError, match="unknown demo size"):
        demo.build_demo(tmp_path / "other", size="tiny")
    assert not (tmp_path / "other").exists()


def _refs(bench):
    for s in bench.scripts:
        for v in s.variants.values():
            yield v.audio
            yield v.reference_audio
    for g in bench.context_groups:
        yield g.audio
    for t in bench.tone_groups:
        for c in t.cases:
            yield c.audio
    for it in bench.selection:
        yield from it.options.values()
