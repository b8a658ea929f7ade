"""The offline demo benchmark: espeak-ng speech + signal processing, reproducible from a seed.

`build_demo(out_dir, seed)` synthesises every clip under `out_dir/audio/`, builds a
`Benchmark` (scripts x 3 variants, voice and reasoning MCQs, context and tone
groups, selection items) and saves it in the project format when the writer is
available. CLI: `python -m eval_backend demo build [--seed S] [--data-dir D] [--out DIR]`.

How each attribute is realised is data (`RECIPES`): adding an attribute is one
entry there (plus, optionally, an opener and reasoning questions in demo_content).
"""
from __future__ import annotations

import dataclasses
import json
import re
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable

import numpy as np

from ..audio.io import encode_wav, sha256_bytes
from ..audio.recipes import Recipe, render
from ..audio.synth import SR, SynthError, check_espeak, rng_for
from ..config import data_dir
from . import demo_content as C
from .demo_sizes import DEMO_SIZES, DemoSize
from .model import (
    ATTRIBUTES,
    MCQ,
    OPTION_LETTERS,
    AudioRef,
    Benchmark,
    ContextCase,
    ContextGroup,
    Script,
    SelectionItem,
    ToneCase,
    ToneGroup,
    Variant,
)

DEMO_VERSION = "demo-1.0"
NEUTRAL_RECIPE = Recipe()


# plain adult voices (all ~100 Hz): each script / group speaks with one of them, picked by the seed;
# a recipe that names its own voice (female, child, whisper...) keeps it
BASE_VOICES = ("en-us", "en-gb", "en-gb-x-rp", "en-us+m3")

# `vary` (held-apart speakers): cascade-cue's cue thresholds were read off the recipes spoken by en-us at
# their nominal rate, pitch and SNR (benchmarks/calibrate_cues.py). A varied build speaks every script
# and group with another accent's voice (also under the recipes' own voice variants: en+f3 becomes
# en-029+f3), its own tempo and pitch, and moves each clip's SNR, all drawn from the seed: clips the
# detector was not tuned on, for the known-groups test.
VARIED_VOICES = ("en-gb-scotland", "en-029", "en-us-nyc", "en-gb-x-gbclan")
VARY_RATE = (0.85, 1.18)        # factor on a recipe's words per minute, per speaker (script / group)
VARY_PITCH = (-10, 10)          # espeak-ng pitch steps (0-99), per speaker
VARY_SNR_DB = (-3.0, 3.0)       # added to a recipe's SNR, per clip


@dataclasses.dataclass(frozen=True)
class Speaker:
    voice: str
    rate: float = 1.0
    pitch: int = 0
    varied: bool = False


def _speaker(seed: int, item_id: str, vary: bool = False) -> Speaker:
    if not vary:
        return Speaker(BASE_VOICES[int(rng_for(seed, f"{item_id}/voice").integers(len(BASE_VOICES)))])
    r = rng_for(seed, f"{item_id}/speaker")
    return Speaker(VARIED_VOICES[int(r.integers(len(VARIED_VOICES)))], float(r.uniform(*VARY_RATE)),
                   int(r.integers(VARY_PITCH[0], VARY_PITCH[1] + 1)), True)


def _voiced(recipe: Recipe, who: Speaker, key: str = "", seed: int = 0) -> Recipe:
    """`recipe` spoken by `who` (the plain voice replaced; with a varied speaker also tempo, pitch, SNR)."""
    if recipe.voice == NEUTRAL_RECIPE.voice:
        recipe = dataclasses.replace(recipe, voice=who.voice)
    elif who.varied and recipe.voice.startswith("en+"):
        recipe = dataclasses.replace(recipe, voice=who.voice + recipe.voice[2:])
    if not who.varied:
        return recipe
    snr = recipe.snr_db + float(rng_for(seed, f"{key}/snr").uniform(*VARY_SNR_DB)) if recipe.background \
        else recipe.snr_db
    return dataclasses.replace(recipe, rate=int(round(recipe.rate * who.rate)),
                               pitch=int(min(99, max(0, recipe.pitch + who.pitch))), snr_db=snr)


def _bg(name: str, snr: float = 6.0) -> Recipe:
    return Recipe(background=name, snr_db=snr)


# attribute -> how to speak it. Neutral speech is en-us, 160 wpm, pitch 50 (~100 Hz).
RECIPES: dict[str, Recipe] = {
    # speaker
    "male": Recipe(voice="en+m3", pitch=22, rate=155),
    "female": Recipe(voice="en+f3", pitch=62),
    "child": Recipe(voice="en+f2", pitch=90, rate=150, effects=(("speed", {"factor": 1.08}),)),
    "elderly": Recipe(voice="en+grandpa", pitch=28, rate=115,
                      effects=(("vibrato", {"hz": 5.0, "st": 1.0}), ("breathy", {"level_db": -16.0}))),
    # paralinguistic
    "fast": Recipe(rate=250),
    "slow": Recipe(rate=95, word_gap=3),
    "shout": Recipe(amplitude=200, pitch=72, rate=170,
                    effects=(("bright", {"amount": 0.6}), ("soft_clip", {"drive": 3.0}))),
    "whisper": Recipe(voice="en+whisper", amplitude=80, rate=150),
    "sobbing": Recipe(pitch=38, rate=120, chunk_words=3, between="sob",
                      effects=(("vibrato", {"hz": 6.0, "st": 2.0}), ("tremolo", {"hz": 6.0, "depth": 0.3}),
                               ("breathy", {"level_db": -16.0}))),
    "happy": Recipe(pitch=78, rate=190, effects=(("bright", {"amount": 0.4}),)),
    "sad": Recipe(pitch=28, rate=115, amplitude=65, effects=(("dark", {"cutoff": 1800.0}),)),
    "angry": Recipe(pitch=45, rate=190, amplitude=180,
                    effects=(("bright", {"amount": 0.9}), ("soft_clip", {"drive": 2.5}))),
    "surprise": Recipe(pitch=80, rate=165, amplitude=130),
    "hoarse": Recipe(voice="en+croak", pitch=35,
                     effects=(("roughness", {"depth": 0.4}), ("breathy", {"level_db": -9.0, "lo": 500.0}))),
    "breathless": Recipe(rate=185, chunk_words=3, between="gasp",
                         effects=(("breathy", {"level_db": -12.0}),)),
    "vocal fatigue": Recipe(pitch=35, rate=130, amplitude=60, effects=(("breathy", {"level_db": -18.0}),)),
    "cough": Recipe(before="cough"),
    "sigh": Recipe(before="sigh", pitch=40, rate=140),
    "laughter": Recipe(after="laughter", pitch=60),
    "yawn": Recipe(before="yawn", pitch=38, rate=135),
    # environment
    "wind": _bg("wind"), "rain": _bg("rain"), "thunderstorm": _bg("thunderstorm"),
    "sea waves": _bg("sea waves"), "car": _bg("car"), "subway": _bg("subway", 8.0),
    "crowd chatter": _bg("crowd chatter", 8.0), "children playing": _bg("children playing", 10.0),
    "applause": _bg("applause", 10.0), "alarm clock": _bg("alarm clock"), "ringtone": _bg("ringtone", 10.0),
    "honking": _bg("honking"), "dogs barking": _bg("dogs barking"),
    "happy music": _bg("happy music", 8.0), "sad music": _bg("sad music", 8.0),
}

# target attribute -> the contrasting attribute of the alternative variant
ALTERNATIVE: dict[str, str] = {
    "male": "female", "female": "male", "child": "elderly", "elderly": "child",
    "fast": "slow", "slow": "fast", "shout": "whisper", "whisper": "shout",
    "sobbing": "happy", "happy": "sad", "sad": "happy", "angry": "happy", "surprise": "sad",
    "hoarse": "breathless", "breathless": "hoarse", "vocal fatigue": "shout",
    "cough": "laughter", "sigh": "laughter", "laughter": "sigh", "yawn": "laughter",
    "wind": "rain", "rain": "wind", "thunderstorm": "sea waves", "sea waves": "thunderstorm",
    "car": "subway", "subway": "car", "crowd chatter": "children playing", "children playing": "crowd chatter",
    "applause": "dogs barking", "alarm clock": "ringtone", "ringtone": "alarm clock", "honking": "dogs barking",
    "dogs barking": "honking", "happy music": "sad music", "sad music": "happy music",
}

# the delivery of spoken replies (selection options), in an assistant voice unlike the users'
REPLY_STYLES: dict[str, Recipe] = {
    "gentle": Recipe(voice="en+f3", rate=130, pitch=38, amplitude=75, lead_s=0.2, tail_s=0.2,
                     effects=(("dark", {"cutoff": 2500.0}),)),
    "cheerful": Recipe(voice="en+f3", rate=215, pitch=88, amplitude=125, lead_s=0.2, tail_s=0.2,
                       effects=(("bright", {"amount": 0.5}),)),
    "calm": Recipe(voice="en+f3", rate=140, pitch=45, amplitude=85, lead_s=0.2, tail_s=0.2),
    "plain": Recipe(voice="en+f3", rate=165, pitch=55, lead_s=0.2, tail_s=0.2),
    "flat": Recipe(voice="en+f3", rate=115, pitch=22, amplitude=70, lead_s=0.2, tail_s=0.2,
                   effects=(("dark", {"cutoff": 1800.0}),)),
    "clear": Recipe(voice="en+f3", rate=135, pitch=55, amplitude=165, word_gap=2, lead_s=0.2, tail_s=0.2),
}


def reference_style(attribute: str) -> str:
    """The REPLY_STYLES key the demo's reference reply to a variant with this attribute is spoken in."""
    if attribute in ATTRIBUTES and ATTRIBUTES[attribute][0] == "environment":
        return C.REFERENCE_STYLE_NOISY
    return C.REFERENCE_STYLE.get(attribute, "plain")

# understanding MCQs: question per type, and the labels an option can name
CATEGORY_TYPE = {"gender": "gender", "age": "age group", "physiological": "voice style", "volume": "voice style",
                 "emotion": "speech emotion", "rate": "speaking pace", "non-verbal": "non-verbal expression"}
QUESTIONS = {
    "coarse": "Which option best describes this audio?",
    "gender": "What is the speaker's gender?",
    "age group": "Which age group does the speaker most likely belong to?",
    "voice style": "How would you describe the speaker's voice?",
    "speech emotion": "Which emotion does the speaker's voice convey?",
    "speaking pace": "How fast is the speaker talking?",
    "non-verbal expression": "Which non-verbal sound does the speaker make?",
    "background sound": "What can be heard in the background?",
}
TYPE_POOL = {
    "gender": ["male", "female"],
    "age group": ["child", "adult", "elderly"],
    "voice style": ["shout", "whisper", "hoarse", "breathless", "sobbing", "vocal fatigue", "normal voice"],
    "speech emotion": ["happy", "sad", "angry", "surprise", "neutral emotion"],
    "speaking pace": ["fast", "slow", "normal pace"],
    "non-verbal expression": ["cough", "sigh", "laughter", "yawn", "no non-verbal"],
    "background sound": [a for a in RECIPES if ATTRIBUTES[a][0] == "environment"] + ["no background"],
}
# what a neutral variant is, for each fine type (speaker types have no neutral answer)
NEUTRAL_ANSWER = {"voice style": "normal voice", "speech emotion": "neutral emotion",
                  "speaking pace": "normal pace", "non-verbal expression": "no non-verbal",
                  "background sound": "no background"}
N_OPTIONS = 4
SELECTION_GROUPS = 7     # groups per kind turned into selection items (~30 items; each needs 2-3 reply clips)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def understanding_type(attribute: str) -> str:
    dim, cat = ATTRIBUTES[attribute]
    return "background sound" if dim == "environment" else CATEGORY_TYPE[cat]


def coarse_text(attribute: str) -> str:
    dim, cat = ATTRIBUTES[attribute]
    desc = C.DESCRIPTIONS.get(attribute, attribute)
    if dim == "speaker":
        return f"Speech from a {desc} speaker" if cat == "gender" else f"Speech from {desc}"
    if dim == "environment":
        return f"Speech with {desc} in the background"
    if cat == "non-verbal":
        return f"A speaker {desc} around their words"
    return _COARSE_SPECIAL.get(attribute, f"The speaker is {desc}")


_COARSE_SPECIAL = {"fast": "The speaker talks fast", "slow": "The speaker talks slowly",
                   "vocal fatigue": "The speaker's voice sounds tired and strained"}


class _Clips:
    """Collects the clips a build needs, renders them (a small thread pool: most of the time is
    spent waiting for espeak-ng), writes them under out_dir/audio/ and hands out AudioRefs.

    The build runs twice: a planning pass records (key, text, recipe) and gets placeholder refs;
    after `render_all`, the real pass gets the written refs. Every clip's RNG depends only on
    (seed, key), so the pool's order changes nothing.
    """

    def __init__(self, out_dir: Path, seed: int, workers: int = 3):
        self.audio_dir = out_dir / "audio"
        self.seed, self.workers = seed, workers
        self.jobs: dict[str, tuple[str, Recipe]] = {}
        self.written: dict[str, AudioRef] = {}

    def get(self, key: str, text: str, recipe: Recipe) -> AudioRef:
        if key in self.written:
            return self.written[key]
        self.jobs.setdefault(key, (text, recipe))
        return AudioRef(None, None, "not rendered yet")

    def _render_one(self, key: str) -> tuple[str, AudioRef]:
        text, recipe = self.jobs[key]
        data = encode_wav(render(text, recipe, rng_for(self.seed, key), SR), SR)
        path = self.audio_dir / f"{key}.wav"
        if not path.exists() or path.read_bytes() != data:
            path.write_bytes(data)
        return key, AudioRef(str(path), sha256_bytes(data))

    def render_all(self, progress: Callable[[int, int], None] | None = None) -> None:
        """`progress(done, total)` after each clip (the Space's opening banner shows it)."""
        self.audio_dir.mkdir(parents=True, exist_ok=True)
        todo = [k for k in self.jobs if k not in self.written]
        with ThreadPoolExecutor(max_workers=self.workers) as pool:
            for n, (key, ref) in enumerate(pool.map(self._render_one, todo), 1):
                self.written[key] = ref
                if progress is not None:
                    progress(n, len(todo))

    def prune(self) -> None:
        """Drop wavs of an earlier build (another seed) that this build did not write."""
        keep = {Path(r.path).name for r in self.written.values()}
        for p in self.audio_dir.glob("*.wav"):
            if p.name not in keep:
                p.unlink()


def _shuffled(right: str, wrongs: list[str], rng: np.random.Generator) -> tuple[list[str], str]:
    options = [right, *wrongs]
    order = rng.permutation(len(options))
    options = [options[i] for i in order]
    return options, OPTION_LETTERS[options.index(right)]


def _fine_mcq(mid: str, qtype: str, label: str, audio: AudioRef, script_id: str, variant: str,
              seed: int) -> MCQ:
    rng = rng_for(seed, mid)
    # the plain answer is always offered, so its presence tells nothing about the audio
    fixed = [NEUTRAL_ANSWER[qtype]] if qtype in NEUTRAL_ANSWER and label != NEUTRAL_ANSWER[qtype] else []
    pool = [p for p in TYPE_POOL[qtype] if p != label and p not in fixed]
    size = min(N_OPTIONS - 1 - len(fixed), len(pool))
    wrongs = fixed + [pool[i] for i in rng.choice(len(pool), size=size, replace=False)]
    options, answer = _shuffled(C.DESCRIPTIONS.get(label, label), [C.DESCRIPTIONS.get(w, w) for w in wrongs], rng)
    return MCQ(mid, "understanding", qtype, audio, QUESTIONS[qtype], options, answer, script_id, variant)


def _coarse_mcq(mid: str, attribute: str, audio: AudioRef, script_id: str, seed: int) -> MCQ:
    """Distractors name sounds that are plainly absent: non-verbal sounds and backgrounds of other categories."""
    rng = rng_for(seed, mid)
    cat = ATTRIBUTES[attribute][1]
    pool = [a for a in RECIPES if a != attribute and ATTRIBUTES[a][1] != cat
            and (ATTRIBUTES[a][0] == "environment" or ATTRIBUTES[a][1] == "non-verbal")]
    wrongs = [coarse_text(pool[i]) for i in rng.choice(len(pool), size=N_OPTIONS - 1, replace=False)]
    options, answer = _shuffled(coarse_text(attribute), wrongs, rng)
    return MCQ(mid, "understanding", "coarse", audio, QUESTIONS["coarse"], options, answer, script_id, "target")


def _reply(attribute: str, plain: str) -> str:
    return f"{C.OPENERS.get(attribute, '')} {plain}".strip()


def _chosen_scripts(seed: int, size: DemoSize) -> list[tuple[int, str]]:
    attrs = [list(RECIPES)[i] for i in rng_for(seed, "assign").permutation(len(RECIPES))]
    return size.choose([attrs[i % len(attrs)] for i in range(len(C.SCRIPTS))])


def _scripts(clips: _Clips, seed: int, vary: bool = False, size: DemoSize = DEMO_SIZES["full"]
             ) -> tuple[list[Script], list[MCQ]]:
    scripts, mcqs = [], []
    for i, attr in _chosen_scripts(seed, size):
        (topic, text, plain), sid = C.SCRIPTS[i], f"demo-{i:03d}"
        alt, who = ALTERNATIVE[attr], _speaker(seed, sid, vary)
        plan = {"target": (attr, RECIPES[attr]), "neutral": ("neutral", NEUTRAL_RECIPE),
                "alternative": (alt, RECIPES[alt])}
        variants = {}
        for name, (label, recipe) in plan.items():
            key = f"{sid}_{_slug(label)}_{name}"
            audio = clips.get(key, text, _voiced(recipe, who, key, seed))
            reply = plain if name == "neutral" else _reply(label, plain)
            # the reference reply, spoken in the delivery the demo's design gives it
            spoken = clips.get(f"{sid}_{name}_reference", reply, REPLY_STYLES[reference_style(label)])
            variants[name] = Variant(name, label, audio, reply, spoken)
        scripts.append(Script(sid, text, attr, topic, variants))

        qtype = understanding_type(attr)
        mcqs.append(_coarse_mcq(f"u-{sid}-coarse", attr, variants["target"].audio, sid, seed))
        mcqs.append(_fine_mcq(f"u-{sid}-target", qtype, attr, variants["target"].audio, sid, "target", seed))
        if understanding_type(alt) == qtype:
            mcqs.append(_fine_mcq(f"u-{sid}-alternative", qtype, alt, variants["alternative"].audio, sid,
                                  "alternative", seed))
        # the plain answer ("normal pace", "nothing but the speaker"...) is right for neutral variants only:
        # ask about half of them, so always picking it stays below chance
        if qtype in NEUTRAL_ANSWER and rng_for(seed, f"{sid}/neutral-mcq").random() < 0.5:
            mcqs.append(_fine_mcq(f"u-{sid}-neutral", qtype, NEUTRAL_ANSWER[qtype], variants["neutral"].audio,
                                  sid, "neutral", seed))
        for k, (rtype, question, right, wrongs) in enumerate(C.REASONING.get(attr, [])):
            mid = f"r-{sid}-{k}"
            options, answer = _shuffled(right, list(wrongs), rng_for(seed, mid))
            mcqs.append(MCQ(mid, "reasoning", rtype, variants["target"].audio, question, options, answer,
                            sid, "target"))
        if C.OPENERS.get(attr):
            mid = f"r-{sid}-empathy"
            r = rng_for(seed, mid)
            cold = C.COLD_REPLIES[int(r.integers(len(C.COLD_REPLIES)))]
            options, answer = _shuffled(variants["target"].reference_reply,
                                        [plain, variants["alternative"].reference_reply, cold], r)
            mcqs.append(MCQ(mid, "reasoning", "empathy-aware response selection", variants["target"].audio,
                            "Which reply responds best to the speaker, given how they sound?", options, answer,
                            sid, "target"))
    return scripts, mcqs


def _groups(clips: _Clips, seed: int, vary: bool = False, size: DemoSize = DEMO_SIZES["full"]
            ) -> tuple[list[ContextGroup], list[ToneGroup]]:
    ctx = []
    for i, g in enumerate(C.CONTEXT_GROUPS[:size.context_groups]):
        gid = f"ctx-{i:02d}"
        cases = [ContextCase(f"c{k + 1}", context, reply) for k, (context, _style, reply) in enumerate(g["cases"])]
        recipe = _voiced(NEUTRAL_RECIPE, _speaker(seed, gid, vary), gid, seed)
        ctx.append(ContextGroup(gid, g["text"], clips.get(gid, g["text"], recipe), cases))
    tones = []
    for i, g in enumerate(C.TONE_GROUPS[:size.tone_groups]):
        gid = f"tone-{i:02d}"
        who = _speaker(seed, gid, vary)
        keys = {t: f"{gid}_{_slug(t)}" for t in g["tones"]}
        cases = [ToneCase(t, t, clips.get(keys[t], g["text"], _voiced(NEUTRAL_RECIPE if t == "neutral" else RECIPES[t],
                                                                       who, keys[t], seed)),
                          C.TONE_REPLIES[t].format(thing=g["thing"])) for t in g["tones"]]
        tones.append(ToneGroup(gid, g["text"], g["context"], cases))
    return ctx, tones


def _selection_item(clips: _Clips, seed: int, iid: str, gid: str, kind: str, context: str, utterance: str,
                    audio: AudioRef, right: tuple[str, str], sibling: tuple[str, str] | None,
                    attribute: str | None) -> SelectionItem:
    """Options: the right words in the right delivery, the same words in a mismatched delivery, and
    (when the group has one) the reply meant for a sibling case in that case's delivery."""
    text, style = right
    opts = [(text, style), (text, C.MISMATCH_STYLE[style])]
    if sibling and sibling[0] != text:
        opts.append(sibling)
    rng = rng_for(seed, iid)
    order = rng.permutation(len(opts))
    options, texts = {}, {}
    for pos, k in enumerate(order):
        letter = OPTION_LETTERS[pos]
        t, st = opts[k]
        options[letter] = clips.get(f"{iid}_opt{k}_{st}", t, REPLY_STYLES[st])
        texts[letter] = t
    answer = OPTION_LETTERS[int(np.flatnonzero(order == 0)[0])]
    return SelectionItem(iid, gid, kind, context, utterance, audio, options, answer, texts, attribute)


def _selection(clips: _Clips, seed: int, ctx: list[ContextGroup], tones: list[ToneGroup]) -> list[SelectionItem]:
    items = []
    for g in tones[:SELECTION_GROUPS]:
        cases = [c for c in g.cases if C.TONE_STYLE[c.tone] != "plain"]
        for k, c in enumerate(cases):
            sib = cases[(k + 1) % len(cases)] if len(cases) > 1 else None
            items.append(_selection_item(
                clips, seed, f"sel-{g.id}-{c.id}", g.id, "tone", g.context, g.text, c.audio,
                (c.reference_reply, C.TONE_STYLE[c.tone]),
                (sib.reference_reply, C.TONE_STYLE[sib.tone]) if sib else None, c.tone))
    for g, spec in zip(ctx[:SELECTION_GROUPS], C.CONTEXT_GROUPS):
        styled = [(case, style) for case, (_c, style, _r) in zip(g.cases, spec["cases"]) if style != "plain"]
        for k, (case, style) in enumerate(styled):
            sib = styled[(k + 1) % len(styled)] if len(styled) > 1 else None
            items.append(_selection_item(
                clips, seed, f"sel-{g.id}-{case.id}", g.id, "context", case.context, g.utterance_text, g.audio,
                (case.reference_reply, style), (sib[0].reference_reply, sib[1]) if sib else None, None))
    return items


def _balance_answers(mcqs: list[MCQ], items: list[SelectionItem], seed: int) -> None:
    """Move each right option to the next position of a cycle (seeded start), the other options keeping
    their shuffled order: every letter is right about equally often, so a letter bias gains nothing."""
    base = int(rng_for(seed, "positions").integers(len(OPTION_LETTERS)))
    counts: Counter = Counter()

    def next_pos(n: int) -> int:
        counts[n] += 1
        return (base + counts[n] - 1) % n

    for m in mcqs:
        right = m.options[OPTION_LETTERS.index(m.answer)]
        others = [o for o in m.options if o != right]
        pos = next_pos(len(m.options))
        m.options, m.answer = others[:pos] + [right] + others[pos:], OPTION_LETTERS[pos]
    for it in items:
        others = [k for k in sorted(it.options) if k != it.answer]
        pos = next_pos(len(it.options))
        order = others[:pos] + [it.answer] + others[pos:]
        it.options = {OPTION_LETTERS[i]: it.options[k] for i, k in enumerate(order)}
        it.option_texts = {OPTION_LETTERS[i]: it.option_texts[k] for i, k in enumerate(order)}
        it.answer = OPTION_LETTERS[pos]


def build_demo(out_dir: str | Path, seed: int = 0, save: bool = True, vary: bool = False,
               progress: Callable[[int, int], None] | None = None, size: str = "full") -> Benchmark:
    """Synthesise the demo under `out_dir` and return it; saved in the project format when `save`.
    `vary`: held-apart speakers (other voices, tempi, pitches and SNRs drawn from the seed; see VARIED_VOICES).
    `size`: a key of DEMO_SIZES (a compact build's scripts and clips are the full build's, fewer of them).
    `progress(done, total)`: clips rendered so far (the render pass holds nearly all of the build's time)."""
    if size not in DEMO_SIZES:
        raise ValueError(f"unknown demo size {size!r} (one of {', '.join(DEMO_SIZES)})")
    check_espeak()                       # fail before touching out_dir
    out = Path(out_dir)
    clips = _Clips(out, seed)
    for _ in range(2):                   # plan, render, then build with the real refs
        scripts, mcqs = _scripts(clips, seed, vary, DEMO_SIZES[size])
        ctx, tones = _groups(clips, seed, vary, DEMO_SIZES[size])
        selection = _selection(clips, seed, ctx, tones)
        clips.render_all(progress)
    clips.prune()
    _balance_answers(mcqs, selection, seed)
    tag = ("+varied" if vary else "") + ("" if size == "full" else f"+{size}")
    bench = Benchmark("demo", f"{DEMO_VERSION}+seed{seed}{tag}", scripts, mcqs, ctx, tones, selection,
                      source=f"demo:seed={seed}" + (",varied" if vary else "") + ("" if size == "full" else f",{size}"))
    if save:
        from .dataset import save_benchmark  # why: pulls in `datasets`
        save_benchmark(bench, out)
    return bench


# ------------------------------------------------------------------ CLI
def add_arguments(parser) -> None:
    sub = parser.add_subparsers(dest="demo_command", required=True)
    b = sub.add_parser("build", help="synthesise the demo benchmark (espeak-ng) into a folder")
    b.add_argument("--seed", type=int, default=0, help="random seed (same seed, same benchmark hash)")
    b.add_argument("--data-dir", default=None, help="data directory (default: $EMPATHY_ARENA_DATA_DIR or ./data)")
    b.add_argument("--out", default=None, help="output folder (default: <data_dir>/benchmarks/demo)")
    b.add_argument("--size", choices=sorted(DEMO_SIZES), default="full",
                   help="full (the default; 48 scripts) or compact (16 scripts: the Space's embedded default)")
    b.add_argument("--vary", action="store_true",
                   help="held-apart speakers: other voices, tempi, pitches and SNRs drawn from the seed (clips "
                        "cascade-cue's detector was not tuned on)")


def main(args) -> int:

    if args.seed < 0:
        print("error: --seed must be >= 0", file=sys.stderr)
        return 2
    out = Path(args.out) if args.out else data_dir(args.data_dir) / "benchmarks" / "demo"
    start = time.perf_counter()
    try:
        bench = build_demo(out, seed=args.seed, vary=args.vary, size=args.size)
    except SynthError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    info = bench.info() | {"folder": str(out), "seconds": round(time.perf_counter() - start, 1)}
    print(json.dumps(info, indent=2))
    return 0
