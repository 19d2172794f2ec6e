#!/usr/bin/env bash
# Sourced at the start of every run on the lent GPU machine (see ../shared/device/README.md):
# installs the staged wheels (or reuses them on a warm machine) and the project, editable, without deps.
if [ -f /tmp/site/env.sh ] && [ ! -d .whl ]; then
  . /tmp/site/env.sh
elif [ -d .whl ]; then
  source .whl/install.sh >/dev/null
fi
python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . >/dev/null 2>&1 || echo "project install failed" >&2
export PATH="$HOME/.local/bin:$PATH"
export SOLFORGE_CACHE=${SOLFORGE_CACHE:-/tmp/solforge-cache}
export PYTHONUNBUFFERED=1
