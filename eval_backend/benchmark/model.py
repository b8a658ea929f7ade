"""The benchmark's data model: plain dataclasses, no I/O.

One `Benchmark` covers both papers:
- EchoMind: scripts spoken in target / neutral / alternative styles, voice and
  reasoning MCQs;
- AEQ-Bench: context-variation groups (one utterance, several contexts) and
  tone-variation groups (one text, several tones);
- EmpathyEval: selection items (pick the most empathetic audio reply).

Audio is referenced by `AudioRef` (a local wav path plus its sha256). A clip that
could not be read keeps its place with `error` set, so a broken file flags its
item instead of crashing the load.
"""
from __future__ import annotations

from dataclasses import dataclass, field

# --- EchoMind's attribute vocabulary: 45 labels, 3 dimensions, 12 categories ---
ATTRIBUTE_VOCABULARY: dict[str, dict[str, list[str]]] = {
    "speaker": {
        "gender": ["male", "female"],
        "age": ["child", "adult", "elderly"],
    },
    "paralinguistic": {
        "physiological": ["hoarse", "vocal fatigue", "breathless", "sobbing"],
        "emotion": ["happy", "sad", "angry", "surprise", "fear", "disgust"],
        "volume": ["shout", "whisper"],
        "rate": ["fast", "slow"],
        "non-verbal": ["cough", "sigh", "laughter", "yawn", "moan"],
    },
    "environment": {
        "weather": ["wind", "thunderstorm", "rain"],
        "place": ["car", "subway", "sea waves", "basketball court"],
        "voices": ["applause", "cheering", "crowd chatter", "children playing", "children speaking"],
        "sudden events": ["alarm clock", "ringtone", "honking"],
        "others": ["happy music", "funny music", "sad music", "exciting music", "angry music", "dogs barking"],
    },
}
ATTRIBUTES: dict[str, tuple[str, str]] = {
    label: (dimension, category)
    for dimension, categories in ATTRIBUTE_VOCABULARY.items()
    for category, labels in categories.items()
    for label in labels
}
assert len(ATTRIBUTES) == 45, len(ATTRIBUTES)
DIMENSIONS = tuple(ATTRIBUTE_VOCABULARY)
NEUTRAL = "neutral"  # the attribute of a plainly spoken variant

VARIANTS = ("target", "neutral", "alternative")
# EchoMind: 1 coarse + 7 fine voice MCQ types; 10 reasoning types.
UNDERSTANDING_TYPES = (
    "coarse", "gender", "age group", "voice style", "speech emotion",
    "speaking pace", "non-verbal expression", "background sound",
)
REASONING_TYPES = (
    "multiple-people detection", "laughter sentiment", "shouting sentiment",
    "audio-text sentiment consistency", "response-style matching",
    "personalised recommendation matching", "contextual suggestion",
    "preceding-event inference", "speaker-intent recognition",
    "empathy-aware response selection",
)
MCQ_LEVELS = ("understanding", "reasoning")
SELECTION_KINDS = ("context", "tone")
OPTION_LETTERS = "ABCDEFGH"


def dimension_of(attribute: str) -> str | None:
    """The dimension (speaker / paralinguistic / environment) of a label, None if unknown."""
    found = ATTRIBUTES.get(attribute.strip().lower())
    return found[0] if found else None


@dataclass(frozen=True)
class AudioRef:
    """A clip on local disk. `error` says why it cannot be used (missing, corrupt...)."""
    path: str | None
    sha256: str | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and self.path is not None


@dataclass
class Variant:
    name: str                      # target | neutral | alternative
    attribute: str                 # the attribute this variant realises ("neutral" for plain speech)
    audio: AudioRef
    reference_reply: str | None = None
    # the reference reply spoken (EchoMind ships one per variant; the demo synthesises one): what the
    # reference-anchored delivery metric compares a model's change of delivery with. None = not given.
    reference_audio: AudioRef | None = None


@dataclass
class Script:
    """An EchoMind-style script: semantically neutral words spoken in several styles."""
    id: str
    text: str                      # the spoken words: ASR reference
    attribute: str                 # target attribute label (from ATTRIBUTES)
    topic: str
    variants: dict[str, Variant]   # keyed by variant name
    flags: list[str] = field(default_factory=list)  # reasons the item is (partly) unusable

    @property
    def dimension(self) -> str | None:
        return dimension_of(self.attribute)


@dataclass
class MCQ:
    id: str
    level: str                     # understanding | reasoning
    type: str                      # one of UNDERSTANDING_TYPES / REASONING_TYPES (free text for imports)
    audio: AudioRef
    question: str
    options: list[str]             # option texts; letters are A, B, C... by position
    answer: str                    # the right letter
    script_id: str | None = None
    variant: str | None = None
    flags: list[str] = field(default_factory=list)


@dataclass
class ContextCase:
    id: str
    context: str
    reference_reply: str | None = None


@dataclass
class ContextGroup:
    """AEQ context variation: one utterance audio under 2-3 contexts."""
    id: str
    utterance_text: str
    audio: AudioRef
    cases: list[ContextCase]
    attribute: str | None = None
    flags: list[str] = field(default_factory=list)


@dataclass
class ToneCase:
    id: str
    tone: str                      # an attribute label or emotion name
    audio: AudioRef
    reference_reply: str | None = None


@dataclass
class ToneGroup:
    """AEQ tone variation: one text (and context) spoken in 2-4 tones."""
    id: str
    text: str
    context: str
    cases: list[ToneCase]
    flags: list[str] = field(default_factory=list)


@dataclass
class SelectionItem:
    """EmpathyEval-style: pick the most empathetic audio reply among 2-3 options."""
    id: str
    group_id: str
    kind: str                      # context | tone
    context: str
    utterance_text: str | None
    audio: AudioRef
    options: dict[str, AudioRef]   # letter -> reply audio
    answer: str                    # the right letter
    option_texts: dict[str, str] = field(default_factory=dict)
    attribute: str | None = None
    flags: list[str] = field(default_factory=list)


@dataclass
class Benchmark:
    name: str
    version: str
    scripts: list[Script] = field(default_factory=list)
    mcqs: list[MCQ] = field(default_factory=list)
    context_groups: list[ContextGroup] = field(default_factory=list)
    tone_groups: list[ToneGroup] = field(default_factory=list)
    selection: list[SelectionItem] = field(default_factory=list)
    hash: str = ""                 # content hash, filled by eval_backend.benchmark.dataset.content_hash
    source: str = ""               # the spec string it was loaded from

    def all_audio(self) -> list[AudioRef]:
        refs: list[AudioRef] = []
        for s in self.scripts:
            refs += [v.audio for v in s.variants.values()]
            refs += [v.reference_audio for v in s.variants.values() if v.reference_audio is not None]
        refs += [m.audio for m in self.mcqs]
        refs += [g.audio for g in self.context_groups]
        for g in self.tone_groups:
            refs += [c.audio for c in g.cases]
        for it in self.selection:
            refs.append(it.audio)
            refs += list(it.options.values())
        return refs

    def flagged(self) -> list[tuple[str, str]]:
        """(item id, reason) for every item carrying a flag."""
        out = []
        for coll in (self.scripts, self.mcqs, self.context_groups, self.tone_groups, self.selection):
            for item in coll:
                out += [(item.id, reason) for reason in item.flags]
        return out

    def attributes(self) -> list[str]:
        return sorted({s.attribute for s in self.scripts})

    def info(self) -> dict:
        """The summary printed by `python -m eval_backend benchmark info SPEC --json`."""
        return {
            "name": self.name,
            "version": self.version,
            "hash": self.hash,
            "scripts": len(self.scripts),
            "variants": sum(len(s.variants) for s in self.scripts),
            "attributes": self.attributes(),
            "mcq": {lvl: sum(1 for m in self.mcqs if m.level == lvl) for lvl in MCQ_LEVELS},
            "groups": {"context": len(self.context_groups), "tone": len(self.tone_groups)},
            "selection": len(self.selection),
            "flagged": len(self.flagged()),
        }
