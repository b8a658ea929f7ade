"""What the baselines say: task detection, blind's and cue's spoken replies, MCQ answers, selection choices
(the other contestants' wording strategies: strategies.py).

Pure functions over strings, `Cues` and a few numbers; deterministic (no sampling, ties go
to the earliest option). `cascade-blind` sees only words (transcript + prompt text);
`cascade-cue` also gets the cue the detector claims (none when it abstains) and replies to it in words and
delivery; its MCQ and selection answers use the detector's best guesses.
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
    elif n_audios > 1:           # option clips follow the user's: nothing else sends several
        task = "selection"
    elif len(options) >= 2:      # a question without option lines is answered like any turn
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


# Situation mood from the context text (words, so both baselines may use it).
HARD_PHRASES = ("passed away", "died", "death", "funeral", "hospital", "ill", "sick", "unwell", "surgery",
                "operation", "risky", "unemployed", "struggling", "nervous", "anxious", "worried", "break-in",
                "fights", "isolated", "lonely", "low", "breakup", "bedside", "lost", "fired", "divorce", "alone",
                "pain", "grief", "stressed", "debt", "relies on", "accident", "failed", "cancelled", "upset")
HAPPY_PHRASES = ("dream", "dreamed", "won", "win", "celebrating", "celebrate", "baby", "birth", "new job", "proud",
                 "close friends", "promoted", "promotion", "wedding", "engaged", "birthday", "excited", "finally",
                 "puppy", "graduated", "holiday", "party", "good news")
GENTLE_WORDS = ("sorry", "hard", "here", "with you", "how are you", "feeling", "hope", "take your time", "coping",
                "holding up", "worrying", "unsettling", "kind", "comfort", "lonely", "okay", "upset", "low",
                "frustrating", "quiet")
CHEERFUL_WORDS = ("congratulations", "wonderful", "exciting", "great", "celebrate", "proud", "dream", "big day",
                  "thrilled", "fun", "amazing", "finally", "lovely")


def context_mood(context: str | None) -> int:
    """-1 for a hard situation, +1 for a happy one, 0 when the words say neither (or both equally)."""
    low = (context or "").lower()
    hard = sum(_phrase_hit(p, low) for p in HARD_PHRASES)
    happy = sum(_phrase_hit(p, low) for p in HAPPY_PHRASES)
    return (happy > hard) - (hard > happy)


def _phrase_hit(phrase: str, text: str) -> bool:
    return re.search(rf"(?<![a-z]){re.escape(phrase)}(?![a-z])", text) is not None


MOOD_LINES = {-1: "That sounds like a lot to carry.", 1: "That sounds like good news!", 0: ""}


def _pick(options: tuple[str, ...], key: str) -> str:
    """A stable choice among phrasings, keyed on the words (never random)."""
    h = int(hashlib.sha256(key.encode("utf-8")).hexdigest()[:8], 16)
    return options[h % len(options)]


def blind_reply(transcript: str, context: str | None) -> str:
    """A reply from the words alone: acknowledge, the situation's mood, a topic line, a follow-up question."""
    basis = f"{transcript} {context or ''}"
    topic, line, _ = topic_of(basis)
    ack = _pick(("Thanks for telling me.", "I see.", "Got it, thanks."), transcript.lower())
    follow = _pick(("What would you like to do next?", "How do you feel about it?",
                    "Is there anything I can help with?"), f"{topic}|{transcript.lower()}")
    return " ".join(x for x in (ack, MOOD_LINES[context_mood(context)], line, follow) if x)


SAD_STYLE = Style("sad-gentle", 135, 38, 60, 2)
CALM_STYLE = Style("calm-clear", 150, 42, 90, 2)
LOUD_STYLE = Style("loud-clear", 140, 50, 190, 3)
BRIGHT_STYLE = Style("bright", 185, 62, 110, 0)
GENTLE_STYLE = Style("gentle", 145, 44, 80, 1)
NOISY_REPLY = ("It sounds noisy where you are, so I'll speak up.", "Maybe find a quieter spot if you can.", LOUD_STYLE)

# Each cue: what to say first, how to close, and the delivery (espeak-ng style).
CUE_REPLIES: dict[str, tuple[str, str, Style]] = {
    "sobbing": ("I can hear that you're crying, and I'm so sorry.", "Take your time; I'm right here with you.",
                Style("sad-gentle", 130, 36, 55, 3)),
    "sad": ("You sound really down, and I'm sorry you're feeling this way.", "Do you want to talk about it?",
            SAD_STYLE),
    "vocal fatigue": ("You sound worn out.", "Maybe take a break and rest your voice for a while.", SAD_STYLE),
    "whisper": ("You're speaking very quietly, so I'll keep my voice low too.", "Tell me more whenever you're ready.",
                Style("soft", 145, 44, 50, 1)),
    "angry": ("I can hear how upset and frustrated you are.", "Let's take it one step at a time and sort it out together.",
              CALM_STYLE),
    "shout": ("You sound really worked up.", "I'm listening; let's go through it calmly together.", CALM_STYLE),
    "raised": ("You sound really fired up!", "I'm listening; tell me what's going on.", CALM_STYLE),
    "fear": ("Your voice sounds shaky, as if you're worried.", "You're not alone with this; we can work it out.",
             Style("reassuring", 145, 42, 80, 1)),
    "breathless": ("You sound out of breath; take a moment.", "Catch your breath first, there's no rush.",
                   Style("reassuring", 140, 44, 85, 2)),
    "happy": ("You sound so cheerful, that's lovely to hear!", "Tell me more!", BRIGHT_STYLE),
    "surprise": ("You sound surprised!", "What happened?", Style("bright", 180, 60, 105, 0)),
    "laughter": ("Ha, you sound amused!", "What was so funny?", BRIGHT_STYLE),
    "hoarse": ("Your voice sounds hoarse, so please go easy on it.", "Maybe have some water and rest your voice.",
               GENTLE_STYLE),
    "wind": ("It sounds windy where you are, so I'll speak up.", "If you can, find a sheltered spot.", LOUD_STYLE),
    "rain": ("It sounds like it's raining hard where you are, so I'll speak up.", "Stay dry out there.", LOUD_STYLE),
    "car": ("I can hear traffic around you, so I'll keep this short and clear.", "Stay safe on the road.", LOUD_STYLE),
    "crowd chatter": NOISY_REPLY,
    "applause": ("It sounds lively around you, so I'll speak up.", "Enjoy the moment!", LOUD_STYLE),
    "alarm clock": ("I can hear something ringing in the background, so I'll speak up.",
                    "You may want to check on that sound.", LOUD_STYLE),
    "fast": ("You're talking quite fast; take a breath, there's no rush.", "We can go through it slowly.",
             Style("calm", 145, 46, 95, 2)),
    "slow": ("Let's take our time with this.", "I'm listening.", Style("patient", 145, 48, 100, 1)),
    "child": ("Hi there! Thanks for telling me.", "That's great. What else happened?",
              Style("gentle-simple", 150, 66, 100, 2)),
    "elderly": ("Thank you for telling me.", "Please let me know if I should say anything again.",
                Style("slow-clear", 140, 48, 140, 2)),
}


LISTENING_ACKS = ("I'm listening.", "I hear you.", "Okay, I'm with you.")
LISTENING_FOLLOWS = ("How does that feel for you?", "How are you doing with it?", "What has that been like?")


def cue_reply(transcript: str, context: str | None, cue: str | None) -> tuple[str, Style]:
    """A reply that names the claimed cue first, then the topic, spoken in a matching style.

    With no claimed cue (the detector abstained or heard nothing) it does not pretend to hear anything: it
    acknowledges, names the situation's mood from the context's words, the topic, and asks how it feels
    (other phrasings than blind's), in the delivery the mood calls for.
    """
    basis = f"{transcript} {context or ''}"
    topic, line, _ = topic_of(basis)
    mood = context_mood(context)
    entry = CUE_REPLIES.get(cue or "") or (NOISY_REPLY if cue == "noisy" else None)
    if entry is None:
        ack = _pick(LISTENING_ACKS, f"cue|{transcript.lower()}")
        follow = _pick(LISTENING_FOLLOWS, f"cue|{topic}|{transcript.lower()}")
        return " ".join(x for x in (ack, MOOD_LINES[mood], line, follow) if x), cue_style(None, context)
    opener, closing, style = entry
    return " ".join(x for x in (opener, MOOD_LINES[mood], line, closing) if x), style


def cue_style(cue: str | None, context: str | None) -> Style:
    """The delivery a claimed cue calls for; with none, the situation's mood (gentle for hard news, bright for
    good news, else neutral)."""
    entry = CUE_REPLIES.get(cue or "") or (NOISY_REPLY if cue == "noisy" else None)
    if entry is not None:
        return entry[2]
    mood = context_mood(context)
    return GENTLE_STYLE if mood < 0 else BRIGHT_STYLE if mood > 0 else NEUTRAL


# --- MCQ ------------------------------------------------------------------------------------------

# Phrases an option may use for each cue (matched as whole words in the lower-cased option text).
# They cover the attribute names and what follows from them (a fitting reply style, a likely cause).
CUE_PHRASES: dict[str, tuple[str, ...]] = {
    "slow": ("slow", "slowly", "unhurried"),
    "fast": ("fast", "quick", "quickly", "rapid", "hurry", "brief and to the point"),
    "normal-pace": ("normal", "moderate", "average"),
    "whisper": ("whisper", "whispering", "whispered", "hushed", "quietly", "overheard"),
    "soft": ("soft", "quiet", "quietly", "gently"),
    "loud": ("loud", "loudly", "shout", "shouting", "yelling"),
    "shout": ("shout", "shouting", "yelling", "raising", "heard clearly", "feel strongly"),
    "normal-volume": ("normal speaking voice", "normal"),
    "male": ("male", "man", "masculine"), "female": ("female", "woman", "feminine"),
    "child": ("child", "kid", "picture book", "cartoon"), "adult": ("adult",),
    "elderly": ("elderly", "old", "senior", "large-print"),
    "sad": ("sad", "sadness", "down", "low", "unhappy", "gently", "warmly", "considerate"),
    "sobbing": ("sobbing", "crying", "tearful", "upsetting", "upset"),
    "angry": ("angry", "anger", "frustration", "frustrated", "annoyed", "furious"),
    "happy": ("happy", "cheerful", "joyful", "joy", "excited", "upbeat", "delighted"),
    "surprise": ("surprised", "surprise", "astonished", "amazed"),
    "fear": ("fear", "afraid", "scared", "anxious", "nervous"),
    "hoarse": ("hoarse", "raspy", "rough", "rest the voice", "something warm"),
    "vocal fatigue": ("tired", "strained", "fatigue", "weary", "exhausted"),
    "breathless": ("breathless", "out of breath", "running", "climbing stairs", "panting"),
    "laughter": ("laughing", "laughter", "laugh", "amusement", "funny"),
    "wind": ("wind", "windy", "dress warmly"), "rain": ("rain", "raining", "umbrella", "storm", "thunderstorm"),
    "car": ("car", "traffic", "honking", "driving", "engine"),
    "crowd chatter": ("crowd", "chatter", "other people", "people talking", "busy"),
    "applause": ("applause", "clapping", "cheering", "children playing", "group of children"),
    "alarm clock": ("alarm", "alarm clock", "ringtone", "ringing", "beeping"),
    "noisy": ("noise", "noisy", "speak up", "louder"),
    "neutral": ("neutral", "normal", "both neutral", "both calm", "both flat", "no non-verbal", "no background",
                "nobody else", "quiet room"),
}


def cue_weights(cues: Cues) -> dict[str, float]:
    """CUE_PHRASES group -> weight, for what the detector heard (strongest first)."""
    weights: dict[str, float] = {}

    def add(key: str, w: float) -> None:
        if key in CUE_PHRASES:
            weights[key] = max(weights.get(key, 0.0), w)

    for rank, label in enumerate(cues.labels):
        add(label, 3.0 - 0.3 * min(rank, 5))
    if cues.noisy:
        add("noisy", 1.5)
    add({"slow": "slow", "fast": "fast", "normal": "normal-pace"}.get(cues.pace, ""), 2.0)
    add({"whisper": "whisper", "soft": "soft", "loud": "loud", "normal": "normal-volume"}[cues.volume], 1.5)
    if cues.gender:
        add(cues.gender, 2.0)
    add(cues.age, 2.0 if cues.age != "adult" else 1.0)
    if not cues.labels:
        add("neutral", 2.0)
    return weights


def cue_score(text: str, weights: dict[str, float]) -> float:
    low = (text or "").lower()
    return sum(w for key, w in weights.items() if any(_phrase_hit(p, low) for p in CUE_PHRASES[key]))


def mcq_blind(question: str, options: tuple[tuple[str, str], ...], transcript: str) -> tuple[str, str]:
    """(letter, why): the option sharing most content words with what was said and asked."""
    said = content(f"{transcript} {question}")
    scores = [len(content(text) & said) for _, text in options]
    best = max(range(len(options)), key=lambda i: (scores[i], -i))
    return options[best][0], f"option {options[best][0]} shares {scores[best]} content words with the words heard"


def mcq_cue(question: str, options: tuple[tuple[str, str], ...], transcript: str, cues: Cues) -> tuple[str, str]:
    """(letter, why): the option naming what the detector heard; words decide only when no cue phrase matches."""
    weights = cue_weights(cues)
    said = content(f"{transcript} {question}")
    scores = [cue_score(text, weights) + 0.1 * len(content(text) & said) for _, text in options]
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


def _mood_score(text: str, mood: int) -> float:
    """How well a reply's words suit a situation's mood (-1 hard, +1 happy, 0 plain)."""
    low = (text or "").lower()
    gentle = sum(_phrase_hit(p, low) for p in GENTLE_WORDS)
    cheerful = sum(_phrase_hit(p, low) for p in CHEERFUL_WORDS) + min(low.count("!"), 2)
    if mood < 0:
        return gentle - cheerful
    if mood > 0:
        return cheerful - gentle
    return -0.5 * (gentle + cheerful)     # a plain situation wants a plain reply


def selection_blind(context: str | None, user_transcript: str,
                    option_transcripts: list[tuple[str, str]]) -> tuple[str, str]:
    """Words only: fit to the situation's mood, overlap with what was said, empathic words; ties -> first."""
    scores = [score for _, score in selection_words(context, user_transcript, option_transcripts)]
    best = max(range(len(option_transcripts)), key=lambda i: (round(scores[i], 6), -i))
    return option_transcripts[best][0], f"option {option_transcripts[best][0]}'s words fit best"


# cue -> (rate, level, pitch) lean of a fitting reply's delivery (+ up, - down)
_SOOTHE = {"rate": -1.0, "level": -1.0, "pitch": -1.0}
_CALM = {"rate": -1.0, "level": -0.5, "pitch": -0.5}
_BRIGHT = {"rate": 1.0, "level": 0.5, "pitch": 1.0}
LEANS: dict[str, dict[str, float]] = {
    **{k: _SOOTHE for k in ("sad", "sobbing", "whisper", "fear", "hoarse", "vocal fatigue", "breathless")},
    **{k: _CALM for k in ("angry", "shout", "fast")},
    **{k: _BRIGHT for k in ("happy", "surprise", "laughter")},
    "child": {"rate": -1.0, "level": 0.0, "pitch": 0.5},
    "elderly": {"rate": -1.0, "level": 0.5, "pitch": 0.0},
    "slow": {"rate": -1.0, "level": 0.0, "pitch": 0.0},
}
NOISY_LEAN = {"rate": -0.5, "level": 1.0, "pitch": 0.0}


def target_direction(cues: Cues, context: str | None = None) -> dict[str, float]:
    """How a fitting reply's delivery should lean; with no vocal cue, the situation's mood decides."""
    if cues.primary in LEANS:
        return LEANS[cues.primary]
    if cues.noisy:
        return NOISY_LEAN
    mood = context_mood(context)
    return _SOOTHE if mood < 0 else _BRIGHT if mood > 0 else {"rate": 0.0, "level": 0.0, "pitch": 0.0}


def selection_cue(context: str | None, user_transcript: str, cues: Cues,
                  options: list[tuple[str, str, Delivery]]) -> tuple[str, str]:
    """The option whose delivery leans the way the user's state calls for; words add the rest.

    Each option's rate / level / pitch is compared with the options' mean (log-rate ratio
    / 0.15, dB / 6, semitones / 3, each capped at +-2), so the choice depends on how the
    candidates differ, not on absolute levels. With nothing to lean towards, the least
    marked delivery (smallest deviation) wins.
    """
    rates = [max(d.rate, 0.1) for _, _, d in options]
    mean_lr = sum(math.log(r) for r in rates) / len(rates)
    mean_lvl = sum(d.level_dbfs for _, _, d in options) / len(options)
    pitches = [d.pitch_hz for _, _, d in options if d.pitch_hz]
    mean_lp = sum(math.log2(p) for p in pitches) / len(pitches) if pitches else None
    direction = target_direction(cues, context)
    neutral = not any(direction.values())
    weights = cue_weights(cues)
    words_only = dict(selection_words(context, user_transcript, [(o[0], o[1]) for o in options]))
    scores = []
    for (letter, text, d), rate in zip(options, rates):
        z = {"rate": (math.log(rate) - mean_lr) / 0.15, "level": (d.level_dbfs - mean_lvl) / 6.0,
             "pitch": 0.0 if (mean_lp is None or not d.pitch_hz) else 12 * (math.log2(d.pitch_hz) - mean_lp) / 3.0}
        z = {k: max(-2.0, min(2.0, v)) for k, v in z.items()}
        acoustic = -sum(abs(v) for v in z.values()) if neutral else sum(direction[k] * z[k] for k in z)
        scores.append(acoustic + 0.5 * words_only[letter] + 0.5 * cue_score(text, weights) / 3.0)
    best = max(range(len(options)), key=lambda i: (round(scores[i], 6), -i))
    return options[best][0], f"heard: {', '.join(cues.labels) or 'neutral'}; option {options[best][0]}'s delivery fits"


def selection_words(context: str | None, user_transcript: str,
                    option_transcripts: list[tuple[str, str]]) -> list[tuple[str, float]]:
    said = content(f"{user_transcript} {context or ''}")
    mood = context_mood(context)
    return [(letter, _mood_score(t, mood) + 0.5 * len(content(t) & said) + 0.25 * len(content(t) & EMPATHY_WORDS))
            for letter, t in option_transcripts]
