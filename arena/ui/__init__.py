"""The arena's Gradio tab and its page parts (scripts, CSS, banner, proof-of-work widget): they only wire events."""
