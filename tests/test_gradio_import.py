"""space_shell/gradio_import.py: Gradio imported without re-reading and rewriting its type stubs, and still working.

Each check runs in a fresh Python process (Gradio is imported once per process). An audit hook there records every
file the import opens: Gradio's own stubs (`.pyi` in its install folder) are opened by a plain import and not after
skip_stub_regeneration(); the components are still made, and a page with an event still builds and configures.
"""
from __future__ import annotations

import json
import subprocess
import sys

from tests.support.baselines import ROOT

PROBE = """
import json, sys
opened = []
sys.addaudithook(lambda event, args: opened.append(str(args[0])) if event == "open" else None)
from space_shell.gradio_import import skip_stub_regeneration
took = skip_stub_regeneration() if sys.argv[1] == "skip" else None
import gradio as gr
import gradio.component_meta as meta
with gr.Blocks() as demo:
    box = gr.Textbox(label="words")
    out = gr.Markdown()
    gr.Button("go").click(lambda s: s.upper(), box, out)
config = demo.get_config_file()
print(json.dumps({"took": took, "stubs": sorted({p for p in opened if p.endswith(".pyi") and "gradio" in p}),
                  "writer": meta.create_or_modify_pyi.__name__, "again": skip_stub_regeneration(),
                  "components": sorted({c["type"] for c in config["components"]}),
                  "events": len(config["dependencies"]), "upper": demo.fns[0].fn("quiet")}))
"""


def _python(code: str, *args: str) -> str:
    """stdout's last line of a fresh Python process in the project (tests/conftest.py's environment)."""
    done = subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip().splitlines()[-1]


def _probe(mode: str) -> dict:
    return json.loads(_python(PROBE, mode))


def test_a_plain_import_reads_gradios_stubs_and_a_skipping_one_does_not_and_gradio_still_works():
    plain, skipped = _probe("plain"), _probe("skip")
    assert len(plain["stubs"]) >= 20, plain["stubs"]          # the control: the cost this module removes is there
    assert plain["writer"] == "create_or_modify_pyi"
    assert skipped["took"] is True and skipped["stubs"] == [], skipped["stubs"]
    assert skipped["writer"] == "no_stub_regeneration"
    assert plain["again"] is False and skipped["again"] is False   # once Gradio is imported it is too late
    for got in (plain, skipped):
        assert {"textbox", "markdown", "button"} <= set(got["components"])
        assert got["events"] == 1 and got["upper"] == "QUIET"
    assert plain["components"] == skipped["components"]


def test_the_space_and_the_test_processes_import_gradio_without_its_stubs():
    import gradio.component_meta as meta       # this pytest process: tests/conftest.py skipped them
    assert meta.create_or_modify_pyi.__name__ == "no_stub_regeneration"
    assert _python("import app, gradio.component_meta as m; print(m.create_or_modify_pyi.__name__)") \
        == "no_stub_regeneration"
