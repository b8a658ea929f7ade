"""The arena's pure core: rating and listening math, matchmaking, vote rules and files (no I/O, no clock)."""
