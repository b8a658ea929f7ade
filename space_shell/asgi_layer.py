"""What every ASGI middleware in front of the app shares (space_shell/gradio_guard.py, body_limit.py,
refusal_delay.py): code that lists what the app mounts (tests/test_media.py's crawl of every route) reads `routes`
through all the layers to the app underneath."""
from __future__ import annotations


class AsgiLayer:
    app: object        # the wrapped ASGI app, set by the layer's own __init__

    @property
    def routes(self):
        """The wrapped app's routes."""
        return self.app.routes       # type: ignore[attr-defined]
