"""An idle Space does not spin: Gradio's queue polls for work every 1 ms and for progress every 10 ms by default
(space_shell/gradio_guard.py `unhurry_queue_polls`), which cost an idle app ~4 % of a core.

Two servers in their own processes, each a small Blocks mounted on FastAPI and served by uvicorn on loopback: one
through our `mount_gradio` (the Space's and the test apps' one way in), one through Gradio's plain
`gr.mount_gradio_app`. Each, once serving, reports the CPU its process used over the same idle span; ours must use
well under half of Gradio's default. An event still answers at once (checked through the API in the same run)."""
from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
IDLE_S = 4.0

CHILD = r'''
import json, socket, sys, threading, time
from space_shell.gradio_import import skip_stub_regeneration
skip_stub_regeneration()
import gradio as gr, httpx, uvicorn
from fastapi import FastAPI
from space_shell.gradio_guard import mount_gradio

with gr.Blocks() as demo:
    text, out = gr.Textbox(), gr.Textbox()
    gr.Button().click(lambda x: x + "!", text, out, api_name="echo")
app = FastAPI()
served = mount_gradio(app, demo, data_dir=sys.argv[3], zip_bytes=1 << 20) if sys.argv[1] == "ours" \
    else gr.mount_gradio_app(app, demo, path="/")
sock = socket.socket(); sock.bind(("127.0.0.1", 0)); port = sock.getsockname()[1]
server = uvicorn.Server(uvicorn.Config(served, log_level="error"))
threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True).start()
while not server.started:
    time.sleep(0.05)
url = f"http://127.0.0.1:{port}"
from gradio_client import Client
answer = Client(url + "/", verbose=False).predict("a", api_name="/echo")
time.sleep(1.0)                                   # the client's own threads wind down
before = time.process_time()
time.sleep(float(sys.argv[2]))
print(json.dumps({"idle_cpu_s": time.process_time() - before, "answer": answer,
                  "poll_s": demo._queue.sleep_when_free}))
server.should_exit = True
'''


def _idle_cpu(kind: str, data_dir: Path) -> dict:
    done = subprocess.run([sys.executable, "-c", CHILD, kind, str(IDLE_S), str(data_dir)], cwd=ROOT,
                          capture_output=True, text=True, timeout=180,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "GRADIO_ANALYTICS_ENABLED": "False",
                               "HF_HUB_OFFLINE": "1", "HOME": str(data_dir)})
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_an_idle_mounted_app_polls_a_tenth_as_often_and_still_answers(tmp_path):
    (tmp_path / "ours").mkdir()
    (tmp_path / "plain").mkdir()
    with ThreadPoolExecutor(2) as pool:
        ours, plain = pool.map(lambda k: _idle_cpu(k, tmp_path / k), ("ours", "plain"))
    assert ours["answer"] == plain["answer"] == "a!"
    assert plain["poll_s"] < ours["poll_s"] == 0.01
    assert ours["idle_cpu_s"] < 0.4 * plain["idle_cpu_s"], (ours, plain)
