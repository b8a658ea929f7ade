"""Shared fixtures. Nothing here downloads anything."""
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"
