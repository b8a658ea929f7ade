"""Where the screen (eval_backend/safety) meets what the project stores, serves and publishes (issue 14).

- `ledger.py`: the one adapter over `eval_backend.safety.records` (record, act, read decisions) that also keeps a
  version number in the store's meta table, so the arena's battle index is rebuilt when a decision changes.
- `replies.py`: replies are screened when they are *stored* (the worker's hand-off, the start-up bootstrap), never
  when a battle is served. A reply's words are our own Whisper transcript of its audio plus the words the model
  says it spoke; a reply is playable only once screened clean (or released by the operator).
- `texts.py`: voters' reasons (screened after the vote, off its path; withheld from exports until clean) and
  submitted model names and organisations (screened at submission).

eval_backend sits below arena and leaderboard, so both use these modules; nothing here imports them.
"""
