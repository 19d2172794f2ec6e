#!/usr/bin/env bash
# Sourced at the start of every run on the lent GPU machine (see ../shared/device/README.md):
# installs the staged wheels (or reuses them on a warm machine) and the project, editable, without deps.
if [ -f /tmp/site/env.sh ] && [ ! -d .whl ]; then
  . /tmp/site/env.sh
elif [ -d .whl ]; then
  source .whl/install.sh >/dev/null
fi
python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . >/dev/null 2>&1 || echo "project install failed" >&2
# The staged wheels go in with --no-compile, and candidate processes never write bytecode
# (PYTHONDONTWRITEBYTECODE): without this, every candidate compiled what only candidates import (the
# CuTe DSL, 3.5 s per process on 2026-12-03) from source. A pip install compiles it, so measure that.
# Already compiled files are skipped, so a warm machine pays a second or two.
[ -d /tmp/site ] && python3 -m compileall -q -j 0 /tmp/site >/dev/null 2>&1
# The same for the machine's own torch environment: it has no bytecode for torch or sympy and sets
# PYTHONDONTWRITEBYTECODE=1, so every judge and candidate compiled them from source (import torch 3.6 s
# against 1.9 s with bytecode, sympy 2.7 s inside a CuTe DSL solution's first call; 2026-12-03).
# About 20 s on a fresh machine, once.
_purelib=$(python3 -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
[ -w "$_purelib" ] && python3 -m compileall -q -j 0 "$_purelib" >/dev/null 2>&1
export PATH="$HOME/.local/bin:$PATH"
export SOLFORGE_CACHE=${SOLFORGE_CACHE:-/tmp/solforge-cache}
export PYTHONUNBUFFERED=1
# The working tree's commit, written before the run (`git rev-parse --short HEAD > .device-commit`) and carried:
# the copied .git is the last landed commit's, so results would name that one.
if [ -z "${SOLFORGE_COMMIT:-}" ] && [ -s .device-commit ]; then
  SOLFORGE_COMMIT=$(cat .device-commit)
  export SOLFORGE_COMMIT
fi
