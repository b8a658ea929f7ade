"""What the runner asks a model: each task turns a Benchmark into Requests.

A task is one registry entry (`TASKS`). A Request is one model call with a stable
id `task/item_id/variant`, so stored replies can be matched to benchmark items
by the scorer and the arena without re-querying anything. A Request also carries
what the benchmark says about its item (the attribute, the user's words, the
context, the topic, its breakdown labels): the scorer, the judges and the arena
read those here instead of walking the benchmark again. Prompt text here is our own.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

from .benchmark.model import OPTION_LETTERS, VARIANTS, AudioRef, Benchmark, dimension_of

PROMPT_VERSION = "tasks-v1"

SYSTEM_CONVERSATION = (
    "You are a warm, attentive voice assistant. Listen to how the user sounds as well as "
    "what they say, and answer in one or two short spoken sentences."
)
SYSTEM_MCQ = (
    "Listen to the audio and answer the multiple-choice question. "
    "Finish with a line of the form 'The answer is: X' where X is the option letter."
)
SYSTEM_ASR = "Transcribe the user's speech exactly. Reply with the words only."
SYSTEM_SELECTION = (
    "First comes the user's audio, then candidate spoken replies in order A, B, C. "
    "Pick the reply that responds most empathetically to the user, in words and in tone. "
    "Finish with 'The answer is: X'."
)


@dataclass(frozen=True)
class Request:
    id: str                        # f"{task}/{item_id}/{variant}"
    task: str                      # e.g. "conversation", "mcq_reasoning" (built by a TASKS entry)
    item_id: str
    variant: str                   # script variant, context case id, tone case id, or "-"
    system: str
    text: str                      # user-side text sent beside the audio (context, question, options)
    audios: tuple[AudioRef, ...]   # user audio first; selection options follow in letter order
    wants_audio: bool              # a spoken reply is wanted (when the model can speak)
    # What the benchmark says about the item (never sent to the model as such):
    voice: str | None = None       # the attribute the user's clip itself carries: a variant's ("neutral" for the
    #                                plain reading), a context group's, a tone case's; None when not annotated
    user_words: str = ""           # what the user says in the clip
    context: str | None = None     # the situation given beside the clip; None when the task gives none
    topic: str = ""
    # the item's breakdown labels for results (attribute = the ITEM's annotated attribute, e.g. a script's
    # target attribute for all its variants; dimension; variant / kind / type), as sorted (key, label) pairs
    labels: tuple[tuple[str, str], ...] = ()

    @property
    def usable(self) -> bool:
        return all(a.ok for a in self.audios)

    @property
    def breakdown(self) -> dict[str, str]:
        """{key: label} the results writer groups this item's scores by."""
        return dict(self.labels)

    @property
    def voice_breakdown(self) -> dict[str, str]:
        """What a reply-level metric (judges, audio) groups by: variant (conversation) or kind (the task), and the
        attribute / dimension of the voice the user's clip carries (so a script's neutral reading counts as
        "neutral", not as the script's target attribute)."""
        keys = {"variant": self.variant} if self.task == "conversation" else {"kind": self.task}
        if self.voice:
            keys["attribute"] = self.voice
            keys["dimension"] = dimension_of(self.voice) or "unknown"
        return keys

    @property
    def voice_label(self) -> str:
        """The voice as prompts and per-attribute tables name it: the attribute, or "not annotated"."""
        return self.voice or "not annotated"

    @property
    def user_audio(self) -> str | None:
        """The local path of the user's clip."""
        return self.audios[0].path if self.audios else None


def make_id(task: str, item_id: str, variant: str = "-") -> str:
    return f"{task}/{item_id}/{variant}"


def breakdown_labels(attribute: str | None = None, **labels: str | None) -> tuple[tuple[str, str], ...]:
    """Breakdown labels: an `attribute` (unless None) brings its dimension ("unknown" outside the vocabulary);
    None values are left out."""
    out = {k: v for k, v in labels.items() if v is not None}
    if attribute is not None:
        out.update(attribute=attribute, dimension=dimension_of(attribute) or "unknown")
    return tuple(sorted(out.items()))


def format_options(options: Iterable[str]) -> str:
    return "\n".join(f"{OPTION_LETTERS[i]}. {text}" for i, text in enumerate(options))


def asr_requests(b: Benchmark) -> list[Request]:
    out = []
    for s in b.scripts:
        v = s.variants.get("target")
        if v is not None:
            out.append(Request(make_id("asr", s.id, "target"), "asr", s.id, "target", SYSTEM_ASR,
                               "Please transcribe this.", (v.audio,), False, voice=v.attribute,
                               user_words=s.text, topic=s.topic,
                               labels=breakdown_labels(s.attribute, variant="target")))
    return out


def conversation_requests(b: Benchmark) -> list[Request]:
    out = []
    for s in b.scripts:
        for name, v in s.variants.items():
            out.append(Request(make_id("conversation", s.id, name), "conversation", s.id, name,
                               SYSTEM_CONVERSATION, "", (v.audio,), True, voice=v.attribute,
                               user_words=s.text, topic=s.topic, labels=breakdown_labels(s.attribute, variant=name)))
    return out


def mcq_requests(b: Benchmark) -> list[Request]:
    scripts = {s.id: s for s in b.scripts}
    out = []
    for m in b.mcqs:
        s = scripts.get(m.script_id or "")
        out.append(Request(make_id(f"mcq_{m.level}", m.id), f"mcq_{m.level}", m.id, "-", SYSTEM_MCQ,
                           f"{m.question}\n{format_options(m.options)}", (m.audio,), False,
                           user_words=s.text if s else "", topic=s.topic if s else "",
                           labels=breakdown_labels(s.attribute if s else None, type=m.type,
                                              variant=m.variant if m.variant in VARIANTS else None)))
    return out


def context_requests(b: Benchmark) -> list[Request]:
    return [
        Request(make_id("context", g.id, c.id), "context", g.id, c.id, SYSTEM_CONVERSATION,
                f"Context: {c.context}", (g.audio,), True, voice=g.attribute or None, user_words=g.utterance_text,
                context=c.context, labels=breakdown_labels(g.attribute or None, kind="context"))
        for g in b.context_groups for c in g.cases
    ]


def tone_requests(b: Benchmark) -> list[Request]:
    return [
        Request(make_id("tone", g.id, c.id), "tone", g.id, c.id, SYSTEM_CONVERSATION,
                f"Context: {g.context}", (c.audio,), True, voice=c.tone, user_words=g.text, context=g.context,
                labels=breakdown_labels(c.tone, kind="tone"))
        for g in b.tone_groups for c in g.cases
    ]


def selection_requests(b: Benchmark) -> list[Request]:
    out = []
    for it in b.selection:
        letters = sorted(it.options)
        out.append(Request(make_id("selection", it.id), "selection", it.id, "-", SYSTEM_SELECTION,
                           f"Context: {it.context}\nOptions: {', '.join(letters)} (audio, in this order)",
                           (it.audio, *(it.options[k] for k in letters)), False, voice=it.attribute or None,
                           user_words=it.utterance_text or "", context=it.context,
                           labels=breakdown_labels(it.attribute or None, kind=it.kind)))
    return out


@dataclass(frozen=True)
class Task:
    build: Callable[[Benchmark], list[Request]]
    spoken: bool                   # its replies are spoken answers to the user: the arena may serve them


# Adding a task = one entry here (its builder above says what it asks and how its items are labelled).
TASKS: dict[str, Task] = {
    "asr": Task(asr_requests, spoken=False),
    "conversation": Task(conversation_requests, spoken=True),
    "mcq": Task(mcq_requests, spoken=False),
    "context": Task(context_requests, spoken=True),
    "tone": Task(tone_requests, spoken=True),
    "selection": Task(selection_requests, spoken=False),
}
SPOKEN_TASKS: tuple[str, ...] = tuple(name for name, t in TASKS.items() if t.spoken)


def build_requests(b: Benchmark, tasks: Iterable[str] | None = None) -> list[Request]:
    names = list(tasks) if tasks else list(TASKS)
    out: list[Request] = []
    for name in names:
        out += TASKS[name].build(b)
    return out


def select_requests(benchmark: Benchmark, tasks: Iterable[str] | None = None, limit: int | None = None) -> list[Request]:
    """The requests of a run, in a stable order, so a restarted run selects the same ones."""
    tasks = list(tasks or [])
    unknown = [t for t in tasks if t not in TASKS]
    if unknown:
        raise ValueError(f"unknown task(s) {', '.join(unknown)}; known: {', '.join(TASKS)}")
    requests = build_requests(benchmark, tasks or None)
    return requests[:limit] if limit is not None else requests


def requests_by_id(benchmark: Benchmark) -> dict[str, Request]:
    """request id -> Request for every task of a benchmark; memoised per benchmark object (the scorer, the judges
    and the audio metrics look items up by the id of a stored reply)."""
    hit = _BY_ID.get(id(benchmark))
    if hit is not None and hit[0] is benchmark:
        return hit[1]
    index = {r.id: r for r in build_requests(benchmark)}
    if len(_BY_ID) > 8:
        _BY_ID.clear()
    _BY_ID[id(benchmark)] = (benchmark, index)
    return index


_BY_ID: dict[int, tuple[Benchmark, dict[str, Request]]] = {}


def describe_request(benchmark: Benchmark, request_id: str) -> Request | None:
    """The Request behind a stored reply's id; None if the item is not in the benchmark."""
    return requests_by_id(benchmark).get(request_id)
