"""How long a fresh process takes to import Gradio, and the Space's app.py, with and without Gradio's stub rewriting.

    python benchmarks/bench_gradio_import.py [--runs 5]

Each figure is one new Python process (`python -c ...`), timed inside it with perf_counter around the import; the
processes run one after another. `skip` calls space_shell.gradio_import.skip_stub_regeneration() first (as app.py
does); `plain` leaves it out. `import app` is the Space's module as deployed (it skips them itself). Prints the
medians.
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = """
import os, time
if os.environ.get("GRADIO_IMPORT_PLAIN") != "1":
    from space_shell.gradio_import import skip_stub_regeneration
    skip_stub_regeneration()
t = time.perf_counter()
import {module}
print(time.perf_counter() - t)
"""


def once(module: str, plain: bool) -> float:
    env = {**os.environ, "GRADIO_ANALYTICS_ENABLED": "False", "HF_HUB_OFFLINE": "1",
           "GRADIO_IMPORT_PLAIN": "1" if plain else "0", "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", SCRIPT.format(module=module)], cwd=ROOT, env=env,
                         capture_output=True, text=True, check=True, timeout=300)
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    print(f"{platform.node()} {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}, python {platform.python_version()}")
    for module, modes in (("gradio", (True, False)), ("app", (False,))):    # app.py skips them itself
        for plain in modes:
            times = [once(module, plain) for _ in range(args.runs)]
            print(f"import {module} {'plain' if plain else 'skip '}: median {statistics.median(times):.2f} s "
                  f"(runs {', '.join(f'{t:.2f}' for t in times)})")
    print(f"load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
