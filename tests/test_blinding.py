"""Nothing a visitor can get before voting tells A from B (issue 21, point 2).

The attacker, against the real Space (`python app.py` on loopback; two models whose every reply is a distinct
recording, written by runs a second apart, as two real runs would be):

1. gathers everything public that names a model: Browse (through the Gradio API: every collection, item, model and
   request), the model pages (the Gradio API: each model's sample replies), the audio those pages link
   (`/media/reply/...`: bytes, ETag, Last-Modified, length, duration), the JSON API's ratings;
2. serves 40 battles (the JSON API, and the Gradio tab's own battle event) and fetches each clip as a browser
   would: headers, bytes, duration;
3. guesses each battle's A from any match (byte hash, ETag, Last-Modified, length and duration, duration alone)
   with a named reply, and from the battle's page and API outputs naming a model; without evidence, a coin.

The expected share of right guesses (a coin counts one half) is at most 60%; the arena-pool replies of arena
models are nowhere in Browse or the model pages; a data release holds none of them.
"""
from __future__ import annotations

import hashlib
import io
import json
import re
import secrets
import time
from pathlib import Path

import httpx
import pytest
import soundfile as sf

from eval_backend.showcase import in_arena_pool, in_showcase
from eval_backend.store import Reply, Store
from tests.support.arena_fixtures import VOICES, build_benchmark, espeak_wav, spoken_request_ids
from tests.support.gradio_stream import session_lines
from tests.test_media import SpaceProcess

MODELS = ("warm-model", "flat-model")
MODULE_DATABASE_FIXTURES = ("space",)
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]
N_BATTLES = 40


def seed_distinct(data: Path) -> dict:
    """The benchmark (6 scripts: 9 spoken requests) and one distinct recording per (model, request); each model's
    replies written in its own run, a second after the other's (their files' times differ as real runs' do)."""
    from eval_backend.scoring.results import score, write_results

    store = Store(data)
    b = build_benchmark(data / "benchmarks" / "demo", 6)
    requests = spoken_request_ids(b)
    tmp = data.parent / "synth"
    for m, model in enumerate(MODELS):
        for k, (rid, task, item, variant) in enumerate(requests):
            text = f"Reply {k} from model {m}. That sounds {('hard', 'lovely', 'tiring')[k % 3]}; tell me more."
            wav = espeak_wav(text, tmp / f"{m}_{k}.wav", voice=VOICES[m], rate=150 + 15 * m)
            rel = store.save_reply_audio(model, wav.read_bytes())
            store.put_reply(Reply(model=model, benchmark_hash=b.hash, request_id=rid, task=task, item_id=item,
                                  variant=variant, status="ok", text=text, transcript=text, audio_path=rel))
        write_results(store.root, score(b, store.replies(model=model), model, store,
                                        metrics=["l1.understanding_acc"]).doc)     # the model page's document
        time.sleep(1.1)
    return {"benchmark": b, "requests": [r[0] for r in requests]}


@pytest.fixture(scope="module")
def space(tmp_path_factory):
    cwd = tmp_path_factory.mktemp("blind_cwd")
    info = seed_distinct(cwd / "data")
    app = SpaceProcess(cwd).start()
    yield {"app": app, "data": cwd / "data", **info}
    app.stop()


class GradioSession:
    """One page's Gradio session, driven through the queue protocol."""

    def __init__(self, url: str):
        self.url = url
        self.c = httpx.Client(base_url=url, timeout=120)
        self.c.get("/")
        self.session = "attacker" + secrets.token_hex(6)
        self.config = self.c.get("/config").json()
        self.components = {x["id"]: x for x in self.config["components"]}

    def label(self, cid: int) -> str:
        return self.components[cid]["props"].get("label") or self.components[cid]["props"].get("elem_id") or ""

    def deps(self, labels: list[str]) -> list[dict]:
        return [d for d in self.config["dependencies"]
                if d.get("backend_fn") and [self.label(i) for i in d["inputs"]] == labels]

    def call(self, dep: dict, data: list) -> list:
        r = self.c.post("/gradio_api/queue/join", json={"data": data, "fn_index": dep["id"],
                                                        "session_hash": self.session})
        assert r.status_code == 200, r.text
        event = r.json()["event_id"]
        out: list = []
        for _, msg in session_lines(self.c, str(self.c.base_url).rstrip("/"), self.session):   # to the close
            if (msg or {}).get("msg") == "process_completed" and msg.get("event_id") == event:
                out = (msg.get("output") or {}).get("data") or []
        return out


def wav_seconds(data: bytes) -> float | None:
    try:
        return round(sf.info(io.BytesIO(data)).duration, 4)
    except RuntimeError:
        return None


def features(r: httpx.Response) -> dict:
    return {"sha": hashlib.sha256(r.content).hexdigest(), "etag": r.headers.get("etag"),
            "last_modified": r.headers.get("last-modified"), "length": r.headers.get("content-length"),
            "seconds": wav_seconds(r.content)}


def public_corpus(space) -> tuple[dict[str, list[dict]], str]:  # noqa: C901
    """Everything public that names a model: {model: [features of each audio shown with its name]}, and the
    text of every page output gathered (to look for battle audio URLs or names)."""
    url = space["app"].url
    g = GradioSession(url)
    for dep in g.deps([]):                           # the page's loads: choices of every dropdown
        g.call(dep, [])
    corpus: dict[str, list[dict]] = {m: [] for m in MODELS}
    text = []
    shown_names: set[tuple[str, str]] = set()
    # (several events share a handler: a change and a click, a page load; any one of them will do)
    list_items = g.deps(["Collection"])[0]
    show_item = g.deps(["Collection", "Item"])[0]
    show_reply = g.deps(["Model", "Request"])[0]
    for coll in ("scripts", "context_groups", "tone_groups"):
        items, _ = g.call(list_items, [coll])
        for _, item in items.get("choices", []):
            out = g.call(show_item, [coll, item])
            for _, rid in out[1].get("choices", []):
                for model in MODELS:
                    md, html = g.call(show_reply, [model, rid])
                    text.append(json.dumps([md, html]))
                    for link in re.findall(r'src=\\?"(/media/reply/[^"\\]+)', json.dumps(html)):
                        corpus[model].append(features(g.c.get(link)))
                        shown_names.add((model, rid))
    pick = (g.deps(["Model (measured here)"]) or g.deps(["model-page-pick"]))[0]
    for model in MODELS:
        out = g.call(pick, [model])
        assert out and model.replace("-", "\\-") in out[0], out       # the model page was shown (inert text)
        text.append(json.dumps(out))
        for link in re.findall(r'src=\\?"(/media/reply/[^"\\]+)', json.dumps(out)):
            corpus[model].append(features(g.c.get(link)))
    text.append(g.c.get("/api/arena/ratings").text)
    space["shown"] = shown_names
    return corpus, "\n".join(text)


def test_an_attacker_guesses_battles_no_better_than_chance(space):
    url, data = space["app"].url, space["data"]
    corpus, public_text = public_corpus(space)

    store = Store(data)
    right, evidence, requests = 0.0, 0, set()
    with httpx.Client(base_url=url, timeout=120) as c:
        gradio = GradioSession(url)
        button = next(i for i, x in gradio.components.items() if x["props"].get("elem_id") == "arena-next")
        next_battle = [d for d in gradio.config["dependencies"]
                       if d.get("backend_fn") and any(t[0] == button for t in d["targets"])]
        for n in range(N_BATTLES):
            b = c.post("/api/arena/battle", json={}).json()
            clips = {slot: c.get(b["audio"][slot]) for slot in ("A", "B")}
            assert all(r.status_code == 200 and wav_seconds(r.content) for r in clips.values())   # real audio
            seen = json.dumps(b) + json.dumps({s: dict(r.headers) for s, r in clips.items()})
            truth = store.query("SELECT model_a, request_id FROM arena_battles WHERE id=?", (b["battle_id"],))[0]
            requests.add(truth["request_id"])
            guess = None
            for slot, r in clips.items():
                f = features(r)
                for model, items in corpus.items():
                    for item in items:
                        if (f["sha"] == item["sha"] or (f["etag"] and f["etag"] == item["etag"])
                                or (f["last_modified"] and f["last_modified"] == item["last_modified"])
                                or (f["length"], f["seconds"]) == (item["length"], item["seconds"])
                                or f["seconds"] == item["seconds"]):
                            guess = model if slot == "A" else next(m for m in MODELS if m != model)
            named = [m for m in MODELS if m in seen]
            if named and guess is None:
                guess = named[0]
            if guess is None:
                right += 0.5                              # a coin, counted at its expectation
            else:
                evidence += 1
                right += guess == truth["model_a"]
        if next_battle:                                   # the page's own battle: its outputs name nobody
            out = json.dumps(gradio.call(next_battle[0], [None] * len(next_battle[0]["inputs"])))
            assert not any(m in out for m in MODELS)
    rate = right / N_BATTLES
    print(f"attacker over {N_BATTLES} battles: {rate:.0%} right (expected, a coin counting 1/2); "
          f"{evidence} battles with any evidence; {sum(len(v) for v in corpus.values())} named audio files seen")
    assert rate <= 0.60, (rate, evidence)
    assert all(in_arena_pool(r) for r in requests), requests          # battles use the arena pool only
    # what Browse and the model pages show: showcase replies, and never an arena-pool reply of an arena model
    assert space["shown"] and all(in_showcase(rid) for _, rid in space["shown"]), space["shown"]
    assert {rid for _, rid in space["shown"]} == {r for r in space["requests"] if in_showcase(r)}


def test_a_release_holds_no_reply_a_battle_can_play(space, tmp_path):
    from arena.config import ArenaSettings
    from arena.services.release import write_release
    from arena.services.service import ArenaService

    store = Store(space["data"])
    svc = ArenaService(store, ArenaSettings())
    write_release(svc, tmp_path / "release", rounds=10)
    released = {hashlib.sha256(p.read_bytes()).hexdigest() for p in (tmp_path / "release").rglob("*") if p.is_file()}
    pool = [r for r in store.replies(status="ok") if r.audio_path and in_arena_pool(r.request_id)]
    assert pool and not {hashlib.sha256(store.abspath(r.audio_path).read_bytes()).hexdigest() for r in pool} & released
