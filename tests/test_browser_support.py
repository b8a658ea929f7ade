"""tests/support/browser.py's wait for playable audio: it passes on a player that loads, and when a player never
does, it fails saying what the page showed (each player's source, readyState, networkState and media error), so a
browser test's timeout names its cause."""
from __future__ import annotations

import io
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest
import soundfile as sf

from tests.support.browser import new_page, wait_for_playable

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """A loopback HTTP server with a page of two players: one plays a real WAV, one points at a missing file."""
    root = tmp_path_factory.mktemp("site")
    buf = io.BytesIO()
    sf.write(buf, (0.1 * np.sin(np.arange(16000) / 10)).astype(np.float32), 16000, format="WAV")
    (root / "tone.wav").write_bytes(buf.getvalue())
    (root / "index.html").write_text('<audio id="good" preload="metadata" src="/tone.wav"></audio>'
                                     '<audio id="gone" preload="metadata" src="/missing.wav"></audio>')
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(SimpleHTTPRequestHandler, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_a_player_that_loads_passes_and_one_that_never_does_says_why(chromium, site):
    page = new_page(chromium, 20_000)
    page.goto(site + "/index.html")
    wait_for_playable(page, "#good")
    with pytest.raises(AssertionError) as failed:
        wait_for_playable(page, "#gone", timeout_ms=2_000)
    said = str(failed.value)
    assert "'#gone'" in said and "/missing.wav" in said and "networkState" in said
    assert "'error': 4" in said            # MEDIA_ERR_SRC_NOT_SUPPORTED: what chromium reports for a 404
    page.context.close()
