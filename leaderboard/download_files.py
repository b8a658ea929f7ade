"""Files the page hands to Gradio for a visitor to download: the public vote log, the benchmark table's CSV.

One folder per process; each file is written once, under a sub-folder named by the sha256 of its name and bytes,
and only the `keep` most recently handed-out ones stay. Why: the vote-log buttons used to write a new temporary
folder with a whole copy of the log on every click, never removed (a stranger clicking in a loop filled the disk),
and the table's CSV was rewritten in place on every page load, so a file Gradio was still copying for one visitor
could be truncated by another visitor's load. Here the same bytes are one file however often they are asked for,
a file is never rewritten, and the disk holds at most `keep` of them. The folder is made at the first download
(most processes that build the page hand out none) and goes when the process exits normally. Its name carries the
process id, so a process killed before its exit hook ran (SIGKILL, the OOM killer) leaves a folder the next one
with the same prefix removes when it makes its own: before, every killed app left one in the temporary directory
(~600 on a test machine after a few days of suites that kill apps on purpose).
"""
from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import tempfile
import threading
from pathlib import Path


class DownloadFolder:
    def __init__(self, prefix: str, keep: int = 8):
        if keep < 1:
            raise ValueError("keep must be at least 1")
        self.prefix, self.keep = prefix, keep
        self._root: Path | None = None
        self._lock = threading.Lock()

    @property
    def root(self) -> Path:
        if self._root is None:                     # write() asks under its lock: one folder however many threads
            self._root = Path(tempfile.mkdtemp(prefix=f"{self.prefix}{os.getpid()}_"))
            atexit.register(shutil.rmtree, self._root, True)
            remove_orphans(self.prefix)
        return self._root

    def write(self, name: str, data: str | bytes) -> Path:
        """The path of a file `name` holding `data` (text as UTF-8, written as given: no newline translation)."""
        if Path(name).name != name or name in ("", ".", ".."):
            raise ValueError(f"not a plain file name: {name!r}")
        raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
        digest = hashlib.sha256(name.encode("utf-8") + b"\0" + raw).hexdigest()[:32]
        with self._lock:
            path = self.root / digest / name
            if not path.is_file():
                path.parent.mkdir(parents=True, exist_ok=True)
                tmp = path.with_name(f".{name}.tmp")
                tmp.write_bytes(raw)
                tmp.replace(path)                  # whole or absent: never a half-written file at `path`
            os.utime(path.parent)                  # handed out now: the newest
            self._prune()
        return path

    def files(self) -> list[Path]:
        return sorted(p for p in self._root.glob("*/*") if p.is_file()) if self._root else []

    def _prune(self) -> None:
        held = sorted((d for d in self.root.iterdir() if d.is_dir()), key=lambda d: d.stat().st_mtime_ns,
                      reverse=True)
        for old in held[self.keep:]:
            shutil.rmtree(old, ignore_errors=True)


def remove_orphans(prefix: str) -> list[Path]:
    """Remove the folders `prefix<pid>_*` in the temporary directory whose process is gone; returns them. A folder
    of a live process (this one, another app) or of another user (not ours to remove) stays."""
    gone = []
    for folder in Path(tempfile.gettempdir()).glob(f"{prefix}*_*"):
        pid = folder.name[len(prefix):].split("_", 1)[0]
        if not pid.isdigit():
            continue
        try:                           # another process may be removing the same folder: gone is gone
            ours = folder.is_dir() and folder.stat().st_uid == os.getuid()
        except OSError:
            continue
        if not ours or _alive(int(pid)):
            continue
        shutil.rmtree(folder, ignore_errors=True)
        gone.append(folder)
    return gone


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:            # another user's process
        return True
    return True
