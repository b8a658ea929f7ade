"""Shared fixtures. Nothing here downloads anything."""
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"

import pytest  # noqa: E402


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory):
    """The demo benchmark run through both baselines once per session (see tests/demo_pipeline.py)."""
    from demo_pipeline import run_demo_pipeline
    return run_demo_pipeline(tmp_path_factory.mktemp("demo_run"))
