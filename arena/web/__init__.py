"""The arena's HTTP routes on the app's FastAPI server: the JSON API, live battles, media."""
