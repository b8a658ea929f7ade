"""What the runner asks a model: each task turns a Benchmark into Requests.

A task is one registry entry (`TASKS`). A Request is one model call with a stable
id `task/item_id/variant`, so stored replies can be matched to benchmark items
by the scorer and the arena without re-querying anything. Prompt text here is
our own.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

from .benchmark.model import OPTION_LETTERS, AudioRef, Benchmark

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
    task: str                      # key in TASKS
    item_id: str
    variant: str                   # script variant, context case id, tone case id, or "-"
    system: str
    text: str                      # user-side text sent beside the audio (context, question, options)
    audios: tuple[AudioRef, ...]   # user audio first; selection options follow in letter order
    wants_audio: bool              # a spoken reply is wanted (when the model can speak)

    @property
    def usable(self) -> bool:
        return all(a.ok for a in self.audios)


def make_id(task: str, item_id: str, variant: str = "-") -> str:
    return f"{task}/{item_id}/{variant}"


def format_options(options: Iterable[str]) -> str:
    return "\n".join(f"{OPTION_LETTERS[i]}. {text}" for i, text in enumerate(options))


def asr_requests(b: Benchmark) -> list[Request]:
    out = []
    for s in b.scripts:
        v = s.variants.get("target")
        if v is not None:
            out.append(Request(make_id("asr", s.id, "target"), "asr", s.id, "target", SYSTEM_ASR,
                               "Please transcribe this.", (v.audio,), False))
    return out


def conversation_requests(b: Benchmark) -> list[Request]:
    out = []
    for s in b.scripts:
        for name, v in s.variants.items():
            out.append(Request(make_id("conversation", s.id, name), "conversation", s.id, name,
                               SYSTEM_CONVERSATION, "", (v.audio,), True))
    return out


def mcq_requests(b: Benchmark) -> list[Request]:
    return [
        Request(make_id(f"mcq_{m.level}", m.id), f"mcq_{m.level}", m.id, "-", SYSTEM_MCQ,
                f"{m.question}\n{format_options(m.options)}", (m.audio,), False)
        for m in b.mcqs
    ]


def context_requests(b: Benchmark) -> list[Request]:
    return [
        Request(make_id("context", g.id, c.id), "context", g.id, c.id, SYSTEM_CONVERSATION,
                f"Context: {c.context}", (g.audio,), True)
        for g in b.context_groups for c in g.cases
    ]


def tone_requests(b: Benchmark) -> list[Request]:
    return [
        Request(make_id("tone", g.id, c.id), "tone", g.id, c.id, SYSTEM_CONVERSATION,
                f"Context: {g.context}", (c.audio,), True)
        for g in b.tone_groups for c in g.cases
    ]


def selection_requests(b: Benchmark) -> list[Request]:
    out = []
    for it in b.selection:
        letters = sorted(it.options)
        out.append(Request(make_id("selection", it.id), "selection", it.id, "-", SYSTEM_SELECTION,
                           f"Context: {it.context}\nOptions: {', '.join(letters)} (audio, in this order)",
                           (it.audio, *(it.options[k] for k in letters)), False))
    return out


# Adding a task = one entry here. `spoken` tasks produce replies the arena can serve.
TASKS: dict[str, dict] = {
    "asr": {"build": asr_requests, "spoken": False},
    "conversation": {"build": conversation_requests, "spoken": True},
    "mcq": {"build": mcq_requests, "spoken": False},
    "context": {"build": context_requests, "spoken": True},
    "tone": {"build": tone_requests, "spoken": True},
    "selection": {"build": selection_requests, "spoken": False},
}
SPOKEN_TASKS = ("conversation", "context", "tone")


def build_requests(b: Benchmark, tasks: Iterable[str] | None = None) -> list[Request]:
    names = list(tasks) if tasks else list(TASKS)
    out: list[Request] = []
    for name in names:
        build: Callable[[Benchmark], list[Request]] = TASKS[name]["build"]
        out += build(b)
    return out
