#!/usr/bin/env bash
# Create .venv (if missing) and install research-mcp with its test tools into it.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
# torch first, pinned, so pip does not pick a newer (and much larger) build.
.venv/bin/python -m pip install --quiet "torch>=2.6,<2.14"
.venv/bin/python -m pip install --quiet -e ".[dev]"
echo "research-mcp is installed in .venv. Put it on PATH in this shell with: source .venv/bin/activate" \
  "(or run .venv/bin/research-mcp)."
