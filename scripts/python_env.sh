# Sourced by the other scripts: sets PY to the interpreter to install into and run with.
# A Python whose packages Debian manages (PEP 668) gets a project virtualenv in .venv instead.
if [ -n "${VIRTUAL_ENV:-}" ]; then
  PY=python
elif python3 -c 'import sys, sysconfig, os; sys.exit(0 if os.path.exists(os.path.join(sysconfig.get_paths()["stdlib"], "EXTERNALLY-MANAGED")) else 1)'; then
  [ -x .venv/bin/python ] || python3 -m venv .venv
  PY=.venv/bin/python
else
  PY=python3
fi
