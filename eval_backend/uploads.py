"""Files strangers send through Gradio: who uploaded what, and the one way a handler may open such a file.

Gradio hands an event handler whatever path the request names (a `FileData` is `{"path": ..., "meta": ...}`, and
the path is the sender's choice). So the app keeps its own record of uploads:

- `/gradio_api/upload` is the only way a file enters (space_shell/gradio_guard.py watches it): each stored path
  is recorded with its *owner*, a random id this server keeps in the browser's `ea_uploads` cookie (HttpOnly;
  minted on the first upload). Gradio's upload request carries no session hash, the cookie is what ties an upload
  to the page that sent it; the page's later `queue/join` carries the same cookie.
- `file_refs_allowed` (the guard, before Gradio reads a request's data) and `own_upload` / `read_upload` (every
  handler that opens a path, e.g. the live recording, the predictions zip) accept a path only when it is a file
  inside Gradio's upload folder that this owner uploaded; anything else gets the one message `NOT_AVAILABLE`,
  whether the path exists or not.
- `consume` deletes an upload once its handler has made its own copy (the live recording, the zip), and the
  ledger forgets uploads older than the cache age (Gradio's `delete_cache` deletes their files).

The ledger is per process, like Gradio's upload folder (GRADIO_TEMP_DIR): an upload is usable on the replica that
stored it (behind several replicas, route a browser to one, as Gradio's queue already needs).
"""
from __future__ import annotations

import os
import re
import secrets
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator
from urllib.parse import unquote

UPLOAD_COOKIE = "ea_uploads"
NOT_AVAILABLE = "This file is not available: upload it again from this page."
MAX_UPLOADS = 50_000            # entries the ledger keeps (oldest dropped first; their files expire anyway)
FILE_ROUTE = "/gradio_api/file="
_OWNER = re.compile(r"^[0-9a-f]{32}$")


class UploadRefused(ValueError):
    """A path a handler may not open; `message` is the same whatever the path was."""

    def __init__(self, message: str = NOT_AVAILABLE):
        super().__init__(message)
        self.message = message


def upload_folder() -> Path:
    """Gradio's upload folder (GRADIO_TEMP_DIR, else the system temp dir's `gradio`), resolved."""
    from gradio.utils import get_upload_folder
    return Path(get_upload_folder()).resolve()


def new_owner() -> str:
    return secrets.token_hex(16)


def valid_owner(value) -> str | None:
    return value if isinstance(value, str) and _OWNER.match(value) else None


def request_cookies(request) -> dict:
    """The cookies of a gr.Request (live, or rebuilt from kwargs by Gradio's queue), or of a Starlette request."""
    if request is None:
        return {}
    inner = getattr(request, "request", None) or request
    cookies = getattr(inner, "cookies", None)
    if cookies is None and hasattr(request, "kwargs"):
        cookies = request.kwargs.get("cookies")
    try:
        return dict(cookies or {})
    except (TypeError, ValueError):
        return {}


def owner_of(request) -> str | None:
    """The upload owner of a handler's gr.Request (None: this browser never uploaded)."""
    return valid_owner(request_cookies(request).get(UPLOAD_COOKIE))


@dataclass
class Upload:
    size: int
    at: float
    address: str
    owners: set[str] = field(default_factory=set)


class UploadLedger:
    """Paths stored by `/gradio_api/upload` -> who uploaded them (bounded; thread-safe)."""

    def __init__(self, folder: Callable[[], Path] = upload_folder, clock: Callable[[], float] = time.time,
                 max_entries: int = MAX_UPLOADS):
        self.folder = folder
        self.clock = clock
        self.max_entries = max_entries
        self._items: OrderedDict[str, Upload] = OrderedDict()
        self._lock = threading.Lock()

    def _key(self, path) -> str | None:
        """The resolved path inside the upload folder, or None (outside it, not text, a NUL, too long)."""
        if not isinstance(path, str) or not path or len(path) > 4096 or "\x00" in path:
            return None
        try:
            p = Path(path).resolve()
            folder = self.folder()
        except (OSError, RuntimeError, ValueError):
            return None
        return str(p) if p.is_relative_to(folder) and p != folder else None

    def record(self, paths: list, owner: str, address: str, size: int) -> None:
        now = self.clock()
        with self._lock:
            for path in paths:
                key = self._key(path)
                if key is None:
                    continue
                item = self._items.get(key)
                if item is None:
                    item = self._items[key] = Upload(size, now, address)
                item.owners.add(owner)
                item.at = now
                self._items.move_to_end(key)
            while len(self._items) > self.max_entries:
                self._items.popitem(last=False)

    def owned(self, path, owner: str | None) -> Path | None:
        """The upload's resolved path if `owner` uploaded it and it is still a regular file, else None."""
        key = self._key(path)
        if key is None or owner is None:
            return None
        with self._lock:
            item = self._items.get(key)
            if item is None or owner not in item.owners:
                return None
        p = Path(key)
        return p if p.is_file() and not p.is_symlink() else None

    def forget(self, path) -> None:
        key = self._key(path)
        with self._lock:
            if key is not None:
                self._items.pop(key, None)

    def expire(self, max_age_s: float) -> int:
        """Forget uploads recorded more than `max_age_s` ago (Gradio's delete_cache removes their files)."""
        cutoff = self.clock() - max_age_s
        with self._lock:
            old = [k for k, v in self._items.items() if v.at < cutoff]
            for k in old:
                del self._items[k]
        return len(old)

    def total_bytes(self) -> int:
        with self._lock:
            return sum(v.size for v in self._items.values())

    def __len__(self) -> int:
        return len(self._items)


LEDGER = UploadLedger()     # one per process, as Gradio's upload folder is


def own_upload(path, request, ledger: UploadLedger = LEDGER) -> Path:
    """The file a handler was given, if this browser uploaded it; raises UploadRefused (NOT_AVAILABLE) otherwise.
    The only way a Gradio handler may open a path it received."""
    p = ledger.owned(path, owner_of(request))
    if p is None:
        raise UploadRefused()
    return p


def read_upload(path, request, max_bytes: int, ledger: UploadLedger = LEDGER) -> bytes:
    """The bytes of an upload this browser sent (`own_upload`), at most `max_bytes` (else UploadRefused saying the
    limit: the file is the sender's own)."""
    p = own_upload(path, request, ledger)
    try:
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(fd, "rb") as f:
            data = f.read(max_bytes + 1)
    except OSError:
        raise UploadRefused() from None
    if len(data) > max_bytes:
        raise UploadRefused(f"The file is larger than the limit of {max_bytes:,} bytes.")
    return data


def consume(path, ledger: UploadLedger = LEDGER) -> None:
    """Delete an upload (and its folder, if empty) once its handler keeps its own copy: nothing of it stays in
    Gradio's folder, where `/gradio_api/file=` would serve it."""
    key = ledger._key(path)
    ledger.forget(path)
    if key is None:
        return
    p = Path(key)
    try:
        p.unlink()
        p.parent.rmdir()           # Gradio's <hash>/ folder of this upload
    except OSError:
        pass


# ---------------------------------------------------------------- file references inside a request's data
def file_refs(obj) -> Iterator[dict]:
    """Every dict of `obj` that Gradio could take for a file: one with a "path" or a "url" key (FileData, the
    older `{"path": ...}` shape, and the nested ones of image/video values). Iterative: no depth limit to hit."""
    stack = [obj]
    while stack:
        x = stack.pop()
        if isinstance(x, dict):
            if "path" in x or "url" in x:
                yield x
            stack.extend(x.values())
        elif isinstance(x, list):
            stack.extend(x)


def _same_file_url(url, path: str) -> bool:
    """A FileData's `url` may only repeat where Gradio serves its own path (what the browser sends back)."""
    if url is None:
        return True
    if not isinstance(url, str):
        return False
    i = url.find(FILE_ROUTE)
    return i >= 0 and unquote(url[i + len(FILE_ROUTE):]) == path


def file_refs_allowed(data, owner: str | None, ledger: UploadLedger = LEDGER) -> bool:
    """True when every file reference in `data` names an upload of `owner` (and nothing else: no URL, no path
    outside Gradio's upload folder, no other browser's upload)."""
    for ref in file_refs(data):
        path = ref.get("path")
        if not isinstance(path, str) or not _same_file_url(ref.get("url"), path):
            return False
        if ledger.owned(path, owner) is None:
            return False
    return True
