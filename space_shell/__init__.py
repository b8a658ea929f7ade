"""The Space's shell: what serves the web app (request caps, client addresses, signing, the Gradio guard, the tab contract, the bootstrap, the Hub sync), apart from evaluation (eval_backend)."""
