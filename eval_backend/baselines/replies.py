"""What the two baselines say: task detection, spoken replies, MCQ answers, selection choices.

Pure functions over strings, `Cues` and a few numbers; deterministic (no sampling, ties go
to the earliest option). `cascade-blind` sees only words (transcript + prompt text);
`cascade-cue` also gets the detected cues and replies to them in words and delivery.
"""
from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass

from .cues import Cues
from .speech import NEUTRAL, Style

OPTION_LINE = re.compile(r"^\s*\(?([A-H])[.):]\s+(.+?)\s*$")
WORD = re.compile(r"[a-z']+")
STOP = set("""a an the and or but so to of in on at for with from by is are was were be been am i you he she it we they
me my your his her its our their this that these those there here do does did have has had not no yes as if then than
just very really about into up down out over what which who whom how why when where will would can could should
shall may might must let lets i'm it's that's please okay oh well also too some any all one two""".split())


def words(text: str) -> list[str]:
    return WORD.findall((text or "").lower())


def stem(w: str) -> str:
    """A light suffix strip, enough to match 'shouting'/'shout', 'cries'/'cry'."""
    for suf, rep in (("ies", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("ly", ""), ("s", "")):
        if len(w) > len(suf) + 2 and w.endswith(suf):
            return w[: -len(suf)] + rep
    return w


def content(text: str) -> set[str]:
    return {stem(w) for w in words(text) if w not in STOP and len(w) > 2}


# --- task detection: from the prompt, as a model would read it -------------------------------------

@dataclass(frozen=True)
class Prompt:
    task: str                    # asr | mcq | selection | conversation | context
    system: str
    text: str                    # user-side text
    context: str | None          # the text after "Context:"
    question: str                # MCQ question (text without option lines)
    options: tuple[tuple[str, str], ...]   # (letter, option text)


def parse_prompt(system: str, text: str, n_audios: int) -> Prompt:
    sys_l, text_l = (system or "").lower(), (text or "").lower()
    options, rest = [], []
    for line in (text or "").splitlines():
        m = OPTION_LINE.match(line)
        (options.append((m.group(1), m.group(2))) if m else rest.append(line))
    ctx = re.search(r"context:\s*(.+)", text or "", flags=re.IGNORECASE)
    context = ctx.group(1).strip() if ctx else None
    if "transcribe" in sys_l or text_l.strip().startswith("please transcribe"):
        task = "asr"
    elif n_audios > 1 or "candidate spoken replies" in sys_l or "candidate" in sys_l and "repl" in sys_l:
        task = "selection"
    elif len(options) >= 2 or "multiple-choice" in sys_l:
        task = "mcq"
    else:
        task = "context" if context else "conversation"
    question = " ".join(x.strip() for x in rest if x.strip())
    return Prompt(task, system or "", text or "", context, question, tuple(options))


# --- spoken replies -------------------------------------------------------------------------------

TOPICS: tuple[tuple[str, frozenset, str], ...] = tuple((name, frozenset(stem(w) for w in ws.split()), line) for name, ws, line in (
    ("work", "work job boss office meeting project deadline colleague shift interview manager client report email",
     "Work plans can shift a lot, so it helps to know where things stand."),
    ("school", "school exam class teacher homework test study university grade lesson lecture course",
     "School keeps you busy, and it is good that you are keeping track of it."),
    ("travel", "train flight bus trip travel airport station ticket holiday vacation drive road journey plane",
     "Trips take some planning, and it sounds like you have it in hand."),
    ("food", "dinner lunch breakfast cook cooking restaurant food apple market bread coffee tea cake soup recipe",
     "Food plans are always worth a chat; that sounds like a good idea."),
    ("family", "mother mom father dad sister brother family kid children son daughter grandma grandmother grandfather friend cousin",
     "It is nice to hear about the people close to you."),
    ("health", "doctor hospital sick medicine appointment sleep tired pain headache dentist clinic",
     "Looking after your health matters, so it is good you are on top of it."),
    ("home", "house apartment room kitchen garden move moving rent neighbour neighbor door window furniture",
     "Things at home take time to sort out, one step at a time."),
    ("weather", "rain weather sun snow cold hot wind storm forecast umbrella",
     "The weather can change plans, so it is worth keeping an eye on it."),
    ("money", "money bill pay price bank buy bought shop shopping store sale cost",
     "Keeping track of what things cost is sensible."),
    ("leisure", "game match movie film music concert book weekend party park walk sport football basketball swim",
     "That sounds like a nice way to spend some time."),
    ("pets", "dog cat pet puppy kitten vet",
     "Pets bring a lot to a day."),
))
GENERIC_LINE = "Thanks for letting me know how things are going."


def topic_of(text: str) -> tuple[str, str, str | None]:
    """(topic, line, the word that matched); the topic with most hits wins, earliest listed on ties."""
    toks = [stem(w) for w in words(text)]
    best, best_hits, hit_word = None, 0, None
    for name, vocab, line in TOPICS:
        hits = [t for t in toks if t in vocab]
        if len(hits) > best_hits:
            best, best_hits, hit_word = (name, line), len(hits), hits[0]
    if best is None:
        return "general", GENERIC_LINE, None
    return best[0], best[1], hit_word


def _pick(options: tuple[str, ...], key: str) -> str:
    """A stable choice among phrasings, keyed on the words (never random)."""
    h = int(hashlib.sha256(key.encode("utf-8")).hexdigest()[:8], 16)
    return options[h % len(options)]


def blind_reply(transcript: str, context: str | None) -> str:
    """A reply from the words alone: acknowledge, a topic line, a follow-up question."""
    basis = f"{transcript} {context or ''}"
    topic, line, _ = topic_of(basis)
    ack = _pick(("Thanks for telling me.", "I see.", "Got it, thanks."), transcript.lower())
    follow = _pick(("What would you like to do next?", "How do you feel about it?",
                    "Is there anything I can help with?"), f"{topic}|{transcript.lower()}")
    return f"{ack} {line} {follow}"


# Each cue: what to say first, how to close, and the delivery (espeak-ng style).
CUE_REPLIES: dict[str, tuple[str, str, Style]] = {
    "sobbing": ("I can hear that you're crying, and I'm so sorry.", "Take your time; I'm right here with you.",
                Style("sad-gentle", 130, 36, 55, 3)),
    "sad": ("You sound really down, and I'm sorry you're feeling this way.", "Do you want to talk about it?",
            Style("sad-gentle", 135, 38, 60, 2)),
    "whisper": ("You're speaking very quietly, so I'll keep my voice low too.", "Tell me more whenever you're ready.",
                Style("soft", 145, 44, 50, 1)),
    "angry": ("I can hear how upset and frustrated you are.", "Let's take it one step at a time and sort it out together.",
              Style("calm-clear", 150, 42, 90, 2)),
    "shout": ("You sound really worked up.", "I'm listening; let's go through it calmly together.",
              Style("calm-clear", 150, 42, 90, 2)),
    "fear": ("Your voice sounds shaky, as if you're worried.", "You're not alone with this; we can work it out.",
             Style("reassuring", 145, 42, 80, 1)),
    "happy": ("You sound so cheerful, that's lovely to hear!", "Tell me more!", Style("bright", 185, 62, 110, 0)),
    "surprise": ("You sound surprised!", "What happened?", Style("bright", 180, 60, 105, 0)),
    "hoarse": ("Your voice sounds hoarse, so please go easy on it.", "Maybe have some water and rest your voice.",
               Style("gentle", 150, 45, 85, 1)),
    "wind": ("It sounds windy where you are, so I'll speak up.", "If you can, find a sheltered spot so we can hear each other.",
             Style("loud-clear", 140, 50, 190, 3)),
    "rain": ("It sounds like it's raining hard where you are, so I'll speak up.", "Stay dry out there.",
             Style("loud-clear", 140, 50, 190, 3)),
    "crowd chatter": ("It sounds noisy around you, so I'll speak up.", "Maybe find a quieter spot if you can.",
                      Style("loud-clear", 140, 50, 190, 3)),
    "alarm clock": ("I can hear something beeping in the background, so I'll speak up.", "You may want to check on that sound.",
                    Style("loud-clear", 140, 50, 190, 3)),
    "fast": ("You're talking quite fast; take a breath, there's no rush.", "We can go through it slowly.",
             Style("calm", 145, 46, 95, 2)),
    "slow": ("Let's take our time with this.", "I'm listening.", Style("patient", 145, 48, 100, 1)),
    "child": ("Hi there! Thanks for telling me.", "That's great. What else happened?",
              Style("gentle-simple", 150, 66, 100, 2)),
    "elderly": ("Thank you for telling me.", "Please let me know if I should say anything again.",
                Style("slow-clear", 140, 48, 140, 2)),
}


def cue_reply(transcript: str, context: str | None, cues: Cues) -> tuple[str, Style]:
    """A reply that names the detected cue first, then the topic, spoken in a matching style."""
    basis = f"{transcript} {context or ''}"
    _, line, _ = topic_of(basis)
    entry = CUE_REPLIES.get(cues.primary)
    if entry is None:
        return blind_reply(transcript, context), NEUTRAL
    opener, closing, style = entry
    return f"{opener} {line} {closing}", style


# --- MCQ ------------------------------------------------------------------------------------------

# Words an option may use for each cue value; matched against the option text (stemmed).
CUE_TERMS: dict[str, str] = {
    "slow": "slow slowly unhurried leisurely", "fast": "fast quick quickly rapid rapidly hurried rushed",
    "normal-pace": "normal moderate average steady regular",
    "whisper": "whisper whispering hushed quiet", "soft": "soft quiet gentle low-volume",
    "loud": "loud shout shouting yelling yell", "normal-volume": "normal moderate",
    "male": "male man men boy masculine", "female": "female woman women girl feminine",
    "child": "child kid young boy girl", "adult": "adult grown middle-aged", "elderly": "elderly old senior aged",
    "sad": "sad sadness upset unhappy down depressed sorrow", "sobbing": "sobbing crying cry tearful tears",
    "angry": "angry anger furious annoyed frustrated irritated", "shout": "shout shouting yelling loud",
    "happy": "happy happiness joy joyful cheerful excited delighted", "fear": "fear afraid scared anxious nervous frightened",
    "surprise": "surprise surprised astonished amazed", "hoarse": "hoarse raspy rough",
    "wind": "wind windy", "rain": "rain raining rainy", "crowd chatter": "crowd chatter people talking noisy",
    "alarm clock": "alarm ringtone beeping ringing", "noisy": "noise noisy background",
    "clean": "quiet silence silent clean none no-background",
    "neutral": "neutral calm plain normal flat",
    # reply styles a reasoning question may ask about
    "comfort": "comfort comforting gently gentle sorry support supportive empathetic soothing",
    "calm": "calm calmly patient patiently apologize understand de-escalate",
    "speak-up": "louder repeat speak up quieter place",
}


def _terms(key: str) -> set[str]:
    return {stem(w) for w in CUE_TERMS.get(key, "").split()}


def cue_terms(cues: Cues) -> dict[str, float]:
    """Stemmed term -> weight, for what the detector heard (and, weakly, for what it did not)."""
    weights: dict[str, float] = {}

    def add(key: str, w: float) -> None:
        for t in _terms(key):
            weights[t] = max(weights.get(t, 0.0), w)

    for rank, label in enumerate(cues.labels):
        add(label, 3.0 - 0.3 * min(rank, 5))
    if "sad" in cues.labels or "sobbing" in cues.labels or "whisper" in cues.labels or "fear" in cues.labels:
        add("comfort", 1.5)
    if "angry" in cues.labels or "shout" in cues.labels:
        add("calm", 1.5)
    if cues.noisy:
        add("noisy", 2.0)
        add("speak-up", 1.5)
    else:
        add("clean", 1.0)
    add({"slow": "slow", "fast": "fast", "normal": "normal-pace"}.get(cues.pace, ""), 2.0)
    add({"whisper": "whisper", "soft": "soft", "loud": "loud", "normal": "normal-volume"}[cues.volume], 2.0)
    if cues.gender:
        add(cues.gender, 2.0)
    add(cues.age, 2.0 if cues.age != "adult" else 1.0)
    if not cues.labels:
        add("neutral", 2.0)
    return weights


def mcq_blind(question: str, options: tuple[tuple[str, str], ...], transcript: str) -> tuple[str, str]:
    """(letter, why): the option sharing most content words with what was said and asked."""
    said = content(f"{transcript} {question}")
    scores = [len(content(text) & said) for _, text in options]
    best = max(range(len(options)), key=lambda i: (scores[i], -i))
    return options[best][0], f"option {options[best][0]} shares {scores[best]} content words with the words heard"


def mcq_cue(question: str, options: tuple[tuple[str, str], ...], transcript: str, cues: Cues) -> tuple[str, str]:
    """(letter, why): the option naming what the detector heard; words decide only when no cue term matches."""
    weights = cue_terms(cues)
    said = content(f"{transcript} {question}")
    scores = []
    for _, text in options:
        toks = content(text) | {stem(w) for w in words(text)}
        scores.append(sum(weights.get(t, 0.0) for t in toks) + 0.1 * len(content(text) & said))
    best = max(range(len(options)), key=lambda i: (round(scores[i], 6), -i))
    heard = ", ".join(cues.labels) or "neutral delivery"
    return options[best][0], f"heard: {heard}; option {options[best][0]} fits it best"


def mcq_answer_text(letter: str, why: str) -> str:
    return f"Baseline reasoning: {why}.\nThe answer is: {letter}"


# --- selection --------------------------------------------------------------------------------------

EMPATHY_WORDS = {stem(w) for w in """sorry understand hear feel sounds help here together listen worry
okay care support glad take time""".split()}


@dataclass(frozen=True)
class Delivery:
    """The few delivery measures selection compares (from audio.features)."""
    rate: float                  # syllables/s
    level_dbfs: float
    pitch_hz: float | None


def selection_blind(context: str | None, user_transcript: str,
                    option_transcripts: list[tuple[str, str]]) -> tuple[str, str]:
    """Words only: overlap with the user's words and context, plus empathic words; ties -> first."""
    said = content(f"{user_transcript} {context or ''}")
    scores = [len(content(t) & said) + len(content(t) & EMPATHY_WORDS) for _, t in option_transcripts]
    best = max(range(len(option_transcripts)), key=lambda i: (scores[i], -i))
    return option_transcripts[best][0], f"option {option_transcripts[best][0]}'s words fit best ({scores[best]})"


def target_direction(cues: Cues) -> dict[str, float]:
    """How a fitting reply's delivery should lean, in rate / level / pitch (+ up, - down)."""
    p = cues.primary
    if p in ("sad", "sobbing", "whisper", "fear", "hoarse"):
        return {"rate": -1.0, "level": -1.0, "pitch": -1.0}
    if p in ("angry", "shout", "fast"):
        return {"rate": -1.0, "level": -0.5, "pitch": -0.5}
    if cues.noisy:
        return {"rate": -0.5, "level": 1.0, "pitch": 0.0}
    if p in ("happy", "surprise"):
        return {"rate": 0.5, "level": 0.3, "pitch": 1.0}
    if p in ("child", "elderly", "slow"):
        return {"rate": -1.0, "level": 0.3, "pitch": 0.3 if p == "child" else 0.0}
    return {"rate": 0.0, "level": 0.0, "pitch": 0.0}


def selection_cue(context: str | None, user_transcript: str, cues: Cues,
                  options: list[tuple[str, str, Delivery]]) -> tuple[str, str]:
    """The option whose delivery leans the way the user's state calls for; words break near-ties.

    Each option's rate / level / pitch is compared with the options' mean (log-rate ratio,
    dB / 6, semitones / 3), so the choice depends on how the candidates differ, not on
    absolute levels. With nothing detected the most neutral delivery (smallest deviation) wins.
    """
    rates = [max(d.rate, 0.1) for _, _, d in options]
    mean_lr = sum(math.log(r) for r in rates) / len(rates)
    mean_lvl = sum(d.level_dbfs for _, _, d in options) / len(options)
    pitches = [d.pitch_hz for _, _, d in options if d.pitch_hz]
    mean_lp = sum(math.log2(p) for p in pitches) / len(pitches) if pitches else None
    direction = target_direction(cues)
    neutral = not any(direction.values())
    said = content(f"{user_transcript} {context or ''}")
    cue_words = set(cue_terms(cues))
    scores = []
    for (letter, text, d), rate in zip(options, rates):
        z = {"rate": (math.log(rate) - mean_lr) / 0.15, "level": (d.level_dbfs - mean_lvl) / 6.0,
             "pitch": 0.0 if (mean_lp is None or not d.pitch_hz) else 12 * (math.log2(d.pitch_hz) - mean_lp) / 3.0}
        z = {k: max(-2.0, min(2.0, v)) for k, v in z.items()}
        acoustic = (-sum(abs(v) for v in z.values()) if neutral
                    else sum(direction[k] * z[k] for k in z))
        wordy = 0.2 * (len(content(text) & (EMPATHY_WORDS | cue_words)) + len(content(text) & said))
        scores.append(acoustic + wordy)
    best = max(range(len(options)), key=lambda i: (round(scores[i], 6), -i))
    return options[best][0], f"heard: {', '.join(cues.labels) or 'neutral'}; option {options[best][0]}'s delivery fits"
