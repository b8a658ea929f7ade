"""A process that exits while the battle-audio worker is inside native code exits cleanly (arena/services/
battle_audio.py `stop_workers`): `python -m arena health` used to die with SIGABRT ("terminate called without an
active exception") after printing its report, when its worker was measuring a clip in ONNX Runtime or Praat."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SCRIPT = r"""
import sys, threading
import numpy as np, soundfile as sf
from arena.services.battle_audio import HeardAudio
from eval_backend.scoring.audio_clips import dnsmos

root = sys.argv[1]
sf.write(f"{root}/reply.wav", (0.1 * np.sin(np.arange(48000) / 9.0)).astype("float32"), 24000)
inside = threading.Event()
dnsmos(np.full(16000, 0.01, dtype="float32"), 16000)   # imports and model load now: none may start at exit

def slow_native_measure(path):       # 4 windows: 8 ONNX Runtime calls, each with the GIL released
    inside.set()
    print("measured", dnsmos(np.full(16000 * 13, 0.01, dtype="float32"), 16000)["ovrl"] > 0, flush=True)

heard = HeardAudio(root, also_measure=slow_native_measure)
heard.prepare_later([f"{root}/reply.wav"])
assert inside.wait(120)
print("main thread done", flush=True)   # and the interpreter exits while the worker is in ONNX Runtime
"""


def test_exit_during_native_measuring_waits_for_the_clip_and_does_not_abort(tmp_path):
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path)], capture_output=True, text=True,
                         timeout=300, cwd=ROOT)
    assert out.returncode == 0, (out.returncode, out.stderr[-2000:])
    assert "terminate called" not in out.stderr
    assert out.stdout.splitlines() == ["main thread done", "measured True"], out.stderr[-2000:]   # clip finished, then exit
