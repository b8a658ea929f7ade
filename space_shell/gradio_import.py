"""Import Gradio without regenerating its type stubs.

Every time Gradio is imported, each component class it defines re-reads and re-parses its own source and its `.pyi`
stub in Gradio's install folder and rewrites the stub if they differ (`gradio.component_meta.create_or_modify_pyi`,
81 classes in 6.31): stubs are for editors, nothing at run time reads them, and a Space's install folder is no place
to write. It costs ~1.2 s of the ~3.1 s `import gradio` takes on this 2-core machine, in every process that imports
it: the Space at each start, and each app the test suite starts (docs/benchmarks.md, "Importing Gradio").

`skip_stub_regeneration()` before the first `import gradio` replaces that one function, as the module defining it
is loaded, with one that does nothing. If Gradio is already imported, or a release renames the function, nothing is
changed and Gradio works as before (tests/test_gradio_import.py checks the pinned release takes it).
"""
from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys

MODULE = "gradio.component_meta"
FUNCTION = "create_or_modify_pyi"


def no_stub_regeneration(*_args, **_kwargs) -> None:
    """Stands in for Gradio's stub writer: the component class is made as before, its stub is left alone."""


class _PatchOnLoad(importlib.abc.MetaPathFinder):
    """Finds MODULE once (as the normal path finder would) and replaces FUNCTION right after the module runs."""

    def find_spec(self, name, path, target=None):
        if name != MODULE:
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            if callable(getattr(module, FUNCTION, None)):
                setattr(module, FUNCTION, no_stub_regeneration)

        spec.loader.exec_module = exec_module
        return spec


def skip_stub_regeneration() -> bool:
    """Arrange for Gradio's next first import to skip its stubs; False if Gradio is already imported (too late)."""
    if "gradio" in sys.modules:
        return False
    if not any(isinstance(f, _PatchOnLoad) for f in sys.meta_path):
        sys.meta_path.insert(0, _PatchOnLoad())
    return True
