"""The arena's services: battles, votes, ratings, live battles, gold checks (they receive the store)."""
