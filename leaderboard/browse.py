"""Browsing the benchmark: pure views over a Benchmark and stored replies (no Gradio).

Every text from the benchmark or a reply goes through `eval_backend.inert` (`md` for paragraphs, `mi` for
fields inside a line): the Markdown shown holds no link, image or HTML of theirs."""
from __future__ import annotations

from dataclasses import dataclass

from eval_backend.benchmark.model import Benchmark
from eval_backend.inert import md
from eval_backend.inert import md_inline as mi
from eval_backend.showcase import in_showcase
from eval_backend.store import Reply, Store
from eval_backend.tasks import SPOKEN_TASKS, build_requests, describe_request

COLLECTIONS = {
    "scripts": "EchoMind scripts (target / neutral / alternative)",
    "mcqs": "Voice and reasoning MCQs",
    "context_groups": "AEQ context variation",
    "tone_groups": "AEQ tone variation",
    "selection": "EmpathyEval selection",
}
MAX_CLIPS = 4   # audio slots shown for one item


@dataclass
class ItemView:
    markdown: str
    clips: list[tuple[str, str | None]]    # (label, wav path or None when broken)
    request_ids: list[str]


def _items(b: Benchmark, collection: str) -> list:
    if collection not in COLLECTIONS:
        raise ValueError(f"unknown collection {collection!r}")
    return getattr(b, collection)


def item_choices(b: Benchmark, collection: str) -> list[tuple[str, str]]:
    """(label, id) pairs for a dropdown."""
    out = []
    for it in _items(b, collection):
        hint = getattr(it, "attribute", None) or getattr(it, "type", None) or getattr(it, "kind", None) or ""
        flag = " ⚠" if getattr(it, "flags", None) else ""
        out.append((f"{it.id} · {hint}{flag}" if hint else f"{it.id}{flag}", it.id))
    return out


def _clip(label: str, ref) -> tuple[str, str | None]:
    if ref.ok:
        return label, ref.path
    return f"{label} (unusable: {ref.error})", None


def item_view(b: Benchmark, collection: str, item_id: str) -> ItemView:
    it = next((x for x in _items(b, collection) if x.id == item_id), None)
    if it is None:
        raise KeyError(f"no item {item_id!r} in {collection}")
    lines = [f"### {mi(it.id)}"]
    clips: list[tuple[str, str | None]] = []
    if collection == "scripts":
        lines += [f"**Words:** {md(it.text)}",
                  f"**Attribute:** {mi(it.attribute)} ({mi(it.dimension)}) · **topic:** {mi(it.topic)}"]
        for name, v in it.variants.items():
            clips.append(_clip(f"{name}: {v.attribute}", v.audio))
            if v.reference_reply:
                lines.append(f"- reference reply to *{mi(name)}*: {md(v.reference_reply)}")
    elif collection == "mcqs":
        lines += [f"**{mi(it.level)} · {mi(it.type)}**", md(it.question)]
        lines += [f"- {'✅ ' if chr(65 + i) == it.answer else ''}{chr(65 + i)}. {md(o)}"
                  for i, o in enumerate(it.options)]
        clips.append(_clip("question audio", it.audio))
    elif collection == "context_groups":
        lines.append(f"**Words:** {md(it.utterance_text)}")
        lines += [f"- *{mi(c.id)}* context: {md(c.context)} — reference: {md(c.reference_reply) or '—'}"
                  for c in it.cases]
        clips.append(_clip("utterance", it.audio))
    elif collection == "tone_groups":
        lines += [f"**Words:** {md(it.text)}", f"**Context:** {md(it.context)}"]
        for c in it.cases:
            clips.append(_clip(f"{c.id}: {c.tone}", c.audio))
            lines.append(f"- *{mi(c.tone)}* reference: {md(c.reference_reply) or '—'}")
    else:
        lines += [f"**{mi(it.kind)} variation · group {mi(it.group_id)}**", f"**Context:** {md(it.context)}",
                  f"**Right option:** {mi(it.answer)}"]
        clips.append(_clip("user", it.audio))
        for letter in sorted(it.options):
            clips.append(_clip(f"option {letter}", it.options[letter]))
            if letter in it.option_texts:
                lines.append(f"- {mi(letter)}: {md(it.option_texts[letter])}")
    if it.flags:
        lines.append("**Flags:** " + "; ".join(md(f) for f in it.flags))
    ids = [r.id for r in build_requests(b) if r.item_id == it.id]
    return ItemView("\n\n".join(lines), clips[:MAX_CLIPS], ids)


TASK_TITLES = {"conversation": "Conversation", "context": "Same words, another situation", "tone": "Tone of voice",
               "asr": "Transcription", "mcq_understanding": "Question (understanding)",
               "mcq_reasoning": "Question (reasoning)", "selection": "Choosing the better reply"}
WORDS_SHOWN = 90          # characters of the user's words in a label


def request_label(b: Benchmark | None, request_id: str) -> str:
    """A request as a person reads it: the kind of task, what the user says, the situation (plain text; the
    caller makes it inert), never the internal id `context/ctx-00/c1`."""
    req = describe_request(b, request_id) if b is not None else None
    if req is None:
        return "A request that is not in the current benchmark"
    words = req.user_words.strip()
    if len(words) > WORDS_SHOWN:
        words = words[:WORDS_SHOWN - 1].rstrip() + "…"
    label = TASK_TITLES.get(req.task, req.task.replace("_", " ").capitalize())
    if words:
        label += f": “{words}”"
    if req.context:
        label += f" (situation: {req.context[:WORDS_SHOWN]})"
    elif req.voice and req.voice != "neutral":
        label += f" (said in a {req.voice} voice)"
    return label


def spoken_first(request_ids: list[str]) -> list[str]:
    """The item's requests with those answered by a spoken reply first, the showcase set's before the arena
    pool's (Browse opens on one that can play: an arena-pool reply stays blinded), in their order otherwise."""
    return sorted(request_ids, key=lambda rid: (rid.split("/", 1)[0] not in SPOKEN_TASKS, not in_showcase(rid)))


_OPENING: dict[tuple[str, str], str | None] = {}      # (benchmark hash, collection) -> opening_item's answer


def opening_item(b: Benchmark, collection: str) -> str | None:
    """The item Browse opens a collection on: the first with a showcase request (its replies are shown with
    their model's name and play), else the first item. Remembered per benchmark version: every page load asks."""
    key = (b.hash, collection)
    if key not in _OPENING:
        items = _items(b, collection)
        shown = {r.item_id for r in build_requests(b) if in_showcase(r.id)}
        if len(_OPENING) > 64:
            _OPENING.clear()
        _OPENING[key] = next((it.id for it in items if it.id in shown), items[0].id if items else None)
    return _OPENING[key]


HELD = ("_This reply is not shown: it has not been screened clean by the safety screen (it may be waiting to be "
        "screened, or held for the operator's review)._")


BLINDED = ("_This request is in the arena's pool: its replies play in anonymous battles, so they are not shown "
           "here with their model's name while the model is in the arena. One request in five (the showcase set, "
           "never battled) shows every model's reply._")


def reply_markdown(reply: Reply | None) -> str:
    if reply is None:
        return "_no reply stored for this model and request_"
    if reply.status == "failed":
        return f"**failed** · {mi(reply.error_class)}: {md(reply.error_message)}"
    parts = [f"**Text:** {md(reply.text) or '—'}"]
    if reply.transcript and reply.transcript != reply.text:
        parts.append(f"**Audio transcript:** {md(reply.transcript)}")
    timing = [f"latency {reply.latency_s:.2f} s" if reply.latency_s is not None else "",
              f"first audio byte {reply.ttfab_s:.2f} s" if reply.ttfab_s is not None else ""]
    parts.append(" · ".join(t for t in timing if t))
    return "\n\n".join(p for p in parts if p)


def find_reply(store: Store, benchmark_hash: str, model: str, request_id: str) -> Reply | None:
    return store.reply(model, benchmark_hash, request_id)


def clip_file(benchmark, benchmark_hash: str, collection: str, item_id: str, index: int) -> str | None:
    """The path of clip `index` of a Browse item of the served benchmark (the one the token was minted for)."""
    if benchmark is None or benchmark.hash != benchmark_hash or collection not in COLLECTIONS:
        return None
    try:
        clips = item_view(benchmark, collection, item_id).clips
    except KeyError:
        return None
    return clips[index][1] if 0 <= index < len(clips) else None
