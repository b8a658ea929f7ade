"""What the page hands out to download is bounded on disk and never rewritten under a visitor.

The vote-log buttons wrote a new temporary folder holding the whole log on every click and never removed one: a
stranger clicking in a loop filled the disk. The benchmark table's CSV was rewritten in place on every page load.
The handlers are found from app.py's own page (every event whose output is a download box) and called as Gradio
calls them, on a real AppContext.
"""
from __future__ import annotations

import pytest

from leaderboard.download_files import DownloadFolder
from tests.support.page_fns import page_handlers

T0 = 1_767_225_600.0
DOWNLOAD_BOXES = ("arena-board-vote-log", "bench-csv")


def vote(k: int) -> dict:
    return {"battle_id": f"b{k}", "model_a": "m1", "model_b": "m2", "winner": "m1", "slot": "A", "said": None,
            "sounded": None, "reason": None, "session_id": f"s{k}", "user": None, "ip_hash": f"ip{k}",
            "first_heard": "A", "attribute": None, "dimension": None, "benchmark_hash": "h", "request_id": "r",
            "created_at": T0 + 60.0 * k, "source": "live", "battle_source": "benchmark"}


@pytest.fixture
def page(tmp_path, monkeypatch):
    monkeypatch.setenv("EMPATHY_ARENA_BOOTSTRAP", "0")
    from app_context import AppContext

    return page_handlers(AppContext.from_env(tmp_path / "data"))


def exports(page) -> list:
    """The page's events that fill the vote-log box and take no input (its export buttons)."""
    return [f.fn for f in page.demo.fns.values()
            if any(getattr(o, "elem_id", None) == "arena-board-vote-log" for o in f.outputs) and not f.inputs]


def test_every_download_box_of_the_page_is_filled_by_some_event(page):
    filled = {getattr(o, "elem_id", None) for f in page.demo.fns.values() for o in f.outputs}
    assert set(DOWNLOAD_BOXES) <= filled
    assert len(exports(page)) == 2                                   # JSONL and CSV


def test_vote_log_clicks_in_a_loop_keep_a_bounded_number_of_files_each_the_log_as_it_was(page):
    svc = page.ctx.arena
    handed = []
    for k in range(30):
        svc.append_votes([vote(k)])
        for fn in exports(page):
            update = fn()
            handed.append(update["value"])
            assert update["visible"] is True
            fmt = update["value"].rsplit(".", 1)[1]
            with open(update["value"], encoding="utf-8", newline="") as f:
                assert f.read() == svc.export_votes(fmt)              # the log as it is at this click
    assert len(set(handed)) == 60                                     # 60 different logs were handed out
    folders = {str(p).rsplit("/", 2)[0] for p in handed}
    assert len(folders) == 1, folders                                 # one folder for the process, not per click
    from pathlib import Path
    on_disk = [p for p in Path(folders.pop()).rglob("*") if p.is_file()]
    assert len(on_disk) <= 8, len(on_disk)                            # the newest few only
    again = [fn()["value"] for fn in exports(page) for _ in range(5)]
    assert len(set(again)) == 2 and set(again) <= set(handed[-2:])    # nothing new: the same two files


def test_a_handed_out_file_is_never_rewritten_by_a_later_request(tmp_path):
    folder = DownloadFolder("test_downloads_", keep=3)
    first = folder.write("table.csv", "a,b\n1,2\n")
    second = folder.write("table.csv", "a,b\n3,4\n")
    assert first != second and first.read_text() == "a,b\n1,2\n" and second.read_text() == "a,b\n3,4\n"
    assert folder.write("table.csv", "a,b\n1,2\n") == first          # the same bytes: the same file
    for k in range(10):
        folder.write("table.csv", f"a,b\n{k},x\n")
    assert len(folder.files()) == 3
    assert folder.write("crlf.csv", "a\r\nb\r\n").read_bytes() == b"a\r\nb\r\n"   # as given, no translation
    for bad in ("../x.csv", "a/b.csv", "", ".."):
        with pytest.raises(ValueError):
            folder.write(bad, "x")


def test_a_page_that_hands_out_nothing_leaves_no_folder(tmp_path, monkeypatch):
    """Most processes that build the page (tests, replicas nobody downloads from) never write one: no folder."""
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    folder = DownloadFolder("idle_")
    assert folder.files() == [] and list(tmp_path.iterdir()) == []
    folder.write("a.csv", "x\n")
    assert [p.name for p in tmp_path.iterdir()][0].startswith("idle_")


def test_a_killed_process_leaves_no_folder_behind(tmp_path, monkeypatch):
    """A process killed before its exit hook leaves its folder; the next process to make one removes it, and leaves
    a live process's folder and anything not named like one alone."""
    import os
    import signal
    import subprocess
    import sys
    import tempfile
    from pathlib import Path
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    code = ("import sys, os, signal; sys.path.insert(0, sys.argv[1]); import tempfile; tempfile.tempdir = sys.argv[2]; "
            "from leaderboard.download_files import DownloadFolder; DownloadFolder('kill_').write('a.csv', 'x'); "
            "os.kill(os.getpid(), signal.SIGKILL)")
    root = str(Path(__file__).resolve().parents[1])
    done = subprocess.run([sys.executable, "-c", code, root, str(tmp_path)])
    assert done.returncode == -signal.SIGKILL
    left = [p for p in tmp_path.iterdir() if p.name.startswith("kill_")]
    assert len(left) == 1 and list(left[0].rglob("a.csv")), left        # killed: its exit hook never ran
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (tmp_path / f"kill_{live.pid}_abc").mkdir()                      # a live process's folder
        (tmp_path / "kill_notapid").mkdir()                              # not named like one of ours
        mine = DownloadFolder("kill_").write("b.csv", "y").parents[1]
        names = sorted(p.name for p in tmp_path.iterdir())
        assert left[0].name not in names and mine.name in names, names
        assert f"kill_{live.pid}_abc" in names and "kill_notapid" in names
        assert mine.name.startswith(f"kill_{os.getpid()}_")
    finally:
        live.kill()
        live.wait()
