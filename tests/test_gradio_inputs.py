"""No Gradio input reads a file it was not given by an upload of the same browser (issue 21, point 1).

Against the real Space (`python app.py` on loopback, its own GRADIO_TEMP_DIR), the crawl takes every event of the
page from the app's own config (`/config`: every dependency with a Python function, its inputs) and the API's
named endpoints (`/gradio_api/info`), and sends every file-reference shape Gradio accepts (FileData dicts, the
older `{"path"}` shape, `url` fields, nested values, lists, plain strings) naming private files: canaries in the
data dir and in the working directory (real wav files, so a handler that takes audio would take them),
`/dev/zero`, `/proc/self/environ`, `/etc/passwd`, the data dir itself, the upload folder's parent, and another
browser's upload; through `queue/join` (each crawl session first runs every event once with the page's own
default values, so server-side state such as the live section's consent is set, as a visitor's would be), and
through `call/<api_name>`, reading the event streams. Then:

- no watched file was opened (inotify IN_OPEN on the canaries and the other browser's upload);
- Gradio's folder holds nothing but the two uploads the test made (no copy of anything);
- no response or event carries a private byte (the canaries, `root:x:0:0`, the app's environment marker);
- the app answered a health request, asked every 0.25 s throughout, within 1 s (99 in 100; none hung);
- the answer to a refused path is the same, whether the path exists or not; the browser's own upload is accepted.
"""
from __future__ import annotations

import ctypes
import os
import secrets
import select
import struct
import subprocess
import sys
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from tests.support.arena_fixtures import seed
from tests.support.gradio_stream import session_lines
from tests.support.live_fixtures import utterance
from tests.test_media import SpaceProcess

MODELS = ("warm-model", "flat-model")
MODULE_DATABASE_FIXTURES = ("space",)
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200),
              pytest.mark.store_incidental("Gradio's routes and the files the app opens: the store only backs the page")]
FILE_META = {"_type": "gradio.FileData"}


# ----------------------------------------------------------------------------------------------- inotify
class OpenWatch:
    """Kernel notification of any open/read of the watched files (inotify IN_OPEN | IN_ACCESS), by any process."""

    def __init__(self, paths):
        self.libc = ctypes.CDLL("libc.so.6", use_errno=True)
        self.fd = self.libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        assert self.fd >= 0, ctypes.get_errno()
        self.names = {}
        for p in paths:
            wd = self.libc.inotify_add_watch(self.fd, str(p).encode(), 0x20 | 0x01)
            assert wd >= 0, (p, ctypes.get_errno())
            self.names[wd] = str(p)

    def opened(self) -> list[str]:
        out = []
        while select.select([self.fd], [], [], 0)[0]:
            data = os.read(self.fd, 65536)
            i = 0
            while i + 16 <= len(data):
                wd, mask, _, length = struct.unpack_from("iIII", data, i)
                out.append(self.names.get(wd, str(wd)))
                i += 16 + length
        return out

    def close(self):
        os.close(self.fd)


# ----------------------------------------------------------------------------------------------- the app
@pytest.fixture(scope="module")
def space(tmp_path_factory):
    cwd = tmp_path_factory.mktemp("inputs_cwd")
    data = cwd / "data"
    seed(data, MODELS, n_scripts=1)
    gradio_tmp = tmp_path_factory.mktemp("gradio_tmp")
    env_marker = "ENVMARK" + secrets.token_hex(12)
    wav = utterance()
    canaries = {}
    for rel in ("data/private/canary.wav", "canary.wav", "data/secrets.env", "data/benchmarks/hidden/q0.wav"):
        p = cwd / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        marker = secrets.token_hex(16).encode()
        p.write_bytes(wav + marker if p.suffix == ".wav" else b"SECRET=" + marker)   # a wav with a tail
        canaries[str(p)] = marker
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GRADIO_TEMP_DIR", str(gradio_tmp))
        mp.setenv("EMPATHY_ARENA_TEST_CANARY", env_marker)
        # the crawl is one client: lift the per-address limits of Gradio's routes (test_gradio_limits tests them)
        mp.setenv("EMPATHY_ARENA_JOINS_PER_MINUTE", str(10**9))
        mp.setenv("EMPATHY_ARENA_NEW_SESSIONS_PER_MINUTE", str(10**9))
        mp.setenv("EMPATHY_ARENA_UPLOADS_PER_HOUR", str(10**6))
        app = SpaceProcess(cwd).start()
    yield {"app": app, "cwd": cwd, "data": data, "tmp": gradio_tmp, "canaries": canaries, "env": env_marker,
           "wav": wav}
    app.stop()


def upload(client: httpx.Client, url: str, content: bytes, name: str = "voice.wav") -> str:
    r = client.post(url + "/gradio_api/upload", files={"files": (name, content, "audio/wav")}, timeout=60)
    assert r.status_code == 200, r.text
    return r.json()[0]


def file_data(path, **extra) -> dict:
    return {"path": path, "meta": FILE_META, **extra}


def shapes(target: str, base: str) -> list:
    """Every way a request can name a file to Gradio."""
    return [file_data(target), file_data(target, url=target, orig_name="voice.wav", size=10, mime_type="audio/wav"),
            {"path": target}, {"url": target, "meta": FILE_META},
            file_data("voice.wav", url=f"{base}/gradio_api/file={target}"),
            {"video": file_data(target), "subtitles": None}, [file_data(target)], target]


def read_events(client: httpx.Client, url: str, session: str, pending: set[str], timeout: float = 120.0,
                never_completed: set[str] | None = None) -> str:
    """The session's event stream, as text, until the app closes it (every pending event completed: never hang up
    first, tests/support/gradio_stream.py says why); events still pending at the end join `never_completed`."""
    out = []
    if not pending:
        return ""
    try:
        for line, msg in session_lines(client, url, session, timeout):
            out.append(line)
            if (msg or {}).get("msg") == "process_completed":
                pending.discard(msg.get("event_id"))
    except httpx.HTTPError as exc:
        out.append(f"stream error: {exc!r}")
    if never_completed is not None:
        never_completed |= pending
    pending.clear()
    return "\n".join(out)


class Crawler:
    """One browser: a guest cookie (the page), an upload cookie (its own upload), its own Gradio sessions."""

    def __init__(self, url: str, config: dict, own_wav: bytes):
        self.url = url
        self.config = config
        self.components = {c["id"]: c for c in config["components"]}
        self.client = httpx.Client(base_url=url, timeout=30)
        assert self.client.get("/").status_code == 200
        self.own = upload(self.client, url, own_wav)
        self.session = "crawl" + secrets.token_hex(6)
        self.responses: list[tuple[int, str]] = []
        self.pending: set[str] = set()
        self.joined: dict[str, str] = {}         # event id -> what was sent, to name an event that never completed

    def defaults(self, dep) -> list:
        return [None if self.components[i]["type"] == "state" else self.components[i]["props"].get("value")
                for i in dep["inputs"]]

    def join(self, dep, data) -> tuple[int, str]:
        r = self.client.post("/gradio_api/queue/join", json={"data": data, "fn_index": dep["id"],
                                                             "session_hash": self.session, "event_data": None,
                                                             "trigger_id": None})
        self.responses.append((r.status_code, r.text))
        if r.status_code == 200:
            event = r.json()["event_id"]
            self.pending.add(event)
            self.joined[event] = f"fn_index {dep['id']} ({dep.get('api_name')}): {str(data)[:200]}"
        return r.status_code, r.text

    def drain(self) -> None:
        left: set[str] = set()
        started = time.monotonic()
        text = read_events(self.client, self.url, self.session, self.pending, never_completed=left)
        self.responses.append((0, text))
        if left:      # the stream ended with events never reported completed (the app closed it, or its timeout
                      # was waited out): say which events, and which of the two
            how = "the app closed the stream" if '"close_stream"' in text else "the read timed out"
            warnings.warn(f"events never completed ({how} after {time.monotonic() - started:.1f} s): "
                          + "; ".join(self.joined[e] for e in sorted(left)))

    def prime(self, deps) -> None:
        """Every event once with the page's own values (sets server-side state as a visitor's clicks do)."""
        for dep in deps:
            self.join(dep, self.defaults(dep))
        self.drain()

    def variants(self, dep) -> list[dict]:
        """The inputs' defaults, then each radio input set to each of its other choices (one at a time)."""
        out = [{}]
        for pos, cid in enumerate(dep["inputs"]):
            c = self.components[cid]
            if c["type"] == "radio":
                out += [{pos: v} for _, v in c["props"].get("choices") or [] if v != c["props"].get("value")]
        return out

    def attack(self, dep, payloads: list, few: list) -> None:
        """Each payload in every input at once (the defaults' variants: the radios' other choices, fewer
        payloads): Gradio prepares every input before the handler runs, so each one is tried."""
        base = self.defaults(dep)
        for n, fixed in enumerate(self.variants(dep)):
            for payload in (payloads if n == 0 else few):
                self.join(dep, [fixed.get(pos, payload) for pos in range(len(base))])
        self.drain()

    def call(self, name: str, params: list, payloads: list) -> None:
        for payload in payloads:
            for p in params:
                r = self.client.post(f"/gradio_api/call{name}", json={p["parameter_name"]: payload})
                self.responses.append((r.status_code, r.text))
                if r.status_code == 200 and "event_id" in r.text:
                    with self.client.stream("GET", f"/gradio_api/call{name}/{r.json()['event_id']}",
                                            timeout=30) as s:
                        self.responses.append((0, s.read().decode("utf-8", "replace")))


PROBE = """
import sys, time, httpx
url, out = sys.argv[1], sys.argv[2]
with httpx.Client(timeout=5) as c, open(out, "a") as f:
    while True:
        t0 = time.perf_counter()
        try:
            ok = c.get(url + "/api/arena/health").status_code == 200
        except httpx.HTTPError:
            ok = False
        f.write(f"{time.perf_counter() - t0 if ok else 'inf'}\\n")
        f.flush()
        time.sleep(0.25)
"""


class Probe:
    """Asks the app's health route every 0.25 s while the crawl runs, from a process of its own (the crawl's
    threads would otherwise delay the probe itself); records how long each answer took."""

    def __init__(self, url: str, out: Path):
        self.url, self.out = url, out

    def __enter__(self) -> "Probe":
        self.proc = subprocess.Popen([sys.executable, "-c", PROBE, self.url, str(self.out)])
        return self

    def __exit__(self, *exc) -> None:
        self.proc.terminate()
        self.proc.wait(10)

    @property
    def times(self) -> list[float]:
        return [float(x) for x in self.out.read_text().split()] if self.out.exists() else []


def test_no_input_reads_a_file_it_was_not_given_by_this_browser(space):
    app, data, cwd, tmp = space["app"], space["data"], space["cwd"], space["tmp"]
    config = httpx.get(app.url + "/config", timeout=60).json()
    info = httpx.get(app.url + "/gradio_api/info", timeout=60).json()
    deps = [d for d in config["dependencies"] if d.get("backend_fn")]
    assert len(deps) > 30 and any(len(d["inputs"]) > 10 for d in deps)      # the whole page, not one tab
    kinds = {c["type"] for d in deps for c in config["components"] if c["id"] in d["inputs"]}
    assert {"audio", "file", "textbox", "state"} <= kinds

    other = httpx.Client(base_url=app.url, timeout=30)                    # another browser, its own upload
    other_upload = upload(other, app.url, space["wav"] + b"OTHER" + secrets.token_hex(8).encode())
    crawlers = [Crawler(app.url, config, space["wav"] + secrets.token_hex(8).encode()) for _ in range(2)]
    uploads_made = {other_upload, *(c.own for c in crawlers)}

    canaries = list(space["canaries"])
    targets = canaries + [str(data / "signing_key"), str(data / "arena_salt"), str(data / "store.sqlite3"),
                          str(data), "/dev/zero", "/proc/self/environ", "/etc/passwd", other_upload,
                          f"{tmp}/../{cwd.name}/canary.wav", "canary.wav"]
    payloads = [s for t in targets for s in shapes(t, app.url)]
    few = [file_data(t) for t in (canaries[0], canaries[1], other_upload, "/dev/zero")]

    # the browser's own upload passes; a refused path gets the same answer whether it exists or not
    audio = {c["id"] for c in config["components"] if c["type"] == "audio"}
    start = next(d for d in deps if audio & set(d["inputs"]))             # the live section's send
    c0 = crawlers[0]
    own_status, _ = c0.join(start, [file_data(c0.own), None, None])
    assert own_status == 200
    answers = {c0.join(start, [file_data(p), None, None]) for p in ("/etc/passwd", "/etc/no-such-file-" +
                                                                    secrets.token_hex(4), other_upload)}
    assert len(answers) == 1 and next(iter(answers))[0] in (400, 403), answers

    watch = OpenWatch(canaries + [other_upload])
    t0 = time.monotonic()
    named = list(info["named_endpoints"].items())

    def crawl(n: int, crawler: Crawler) -> None:
        """One crawler, in one thread: a browser reads its session's events on one stream at a time. (Two threads
        sharing a crawler read two streams of one session, each taking some of the other's completions: one stream
        then never closes — a 120 s wait, the 160-185 s runs — and the other's events seem lost.)"""
        crawler.prime(deps)
        for dep in deps[n::len(crawlers)]:
            crawler.attack(dep, payloads, few)
        for name, api in named[n::len(crawlers)]:
            crawler.call(name, api["parameters"], few)

    with Probe(app.url, tmp.parent / "probe.txt") as probe, ThreadPoolExecutor(len(crawlers)) as pool:
        list(pool.map(crawl, range(len(crawlers)), crawlers))
    crawl_s = time.monotonic() - t0
    opened = watch.opened()
    watch.close()
    sent = sum(len(c.responses) for c in crawlers)
    t = sorted(probe.times)
    print(f"crawl: {len(deps)} events, {len(info['named_endpoints'])} named endpoints, {sent} requests in "
          f"{crawl_s:.0f} s; health answered in p50 {t[len(t) // 2]:.3f} s, p99 {t[int(0.99 * len(t))]:.3f} s, "
          f"max {t[-1]:.3f} s over {len(t)} probes; load average {os.getloadavg()[0]:.1f}")

    assert app.proc.poll() is None, app.log()
    assert not opened, f"the app opened {sorted(set(opened))}"
    private = [m for m in space["canaries"].values()] + [b"root:x:0:0", space["env"].encode(),
                                                          (data / "signing_key").read_bytes().strip(),
                                                          (data / "arena_salt").read_bytes().strip(),
                                                          b"SQLite format 3"]
    # Gradio's folder: the test's uploads, and the page's own exports (CSV downloads); no copy of anything
    left = [p for p in tmp.rglob("*") if p.is_file() and str(p) not in uploads_made]
    copied = [str(p) for p in left if p.stat().st_size > 2**20 or any(m in p.read_bytes() for m in private)
              or p.name in {Path(t).name for t in targets}]
    assert not copied, f"copied into Gradio's folder: {copied[:20]}"
    text = "\n".join(body for c in crawlers for _, body in c.responses).encode("utf-8", "replace")
    assert not [m for m in private if m in text]
    # every probe answered (none hung: the probe gives up at 5 s), 99 in 100 within 1 s: on this shared 2-core
    # machine the scheduler alone holds a process back by up to ~2 s now and then (docs/benchmarks.md)
    times = sorted(probe.times)
    assert len(times) > 10 and times[-1] < 5.0 and times[int(0.99 * len(times))] < 1.0, times[-10:]
    statuses = {s for c in crawlers for s, _ in c.responses}
    assert 500 not in statuses
