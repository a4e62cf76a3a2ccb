#!/usr/bin/env bash
# The whole test suite again on the newest torch pip installs (TORCH_NEWEST) under Python PY_NEWEST, from scratch.
# The venv lives in a cache folder outside the clone ($RBG_CACHE_DIR, else ~/.cache/torch-resize-bicubic) and is
# kept between runs: for Python 3.13 PyPI's torch 2.14.1 is a CUDA build of several GB. The working tree is copied
# to build/newest and installed from there (editable), so this build never touches the main venv's extension.
set -euo pipefail
cd "$(dirname "$0")/.."
TORCH_NEWEST=${TORCH_NEWEST:-2.14.1}
PY_NEWEST=${PY_NEWEST:-3.13}
CACHE=${RBG_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/torch-resize-bicubic}

# python3.13 on PATH (a pyenv shim there may not run it), else pyenv's own install of it.
PYBIN=
for cand in "$(command -v "python$PY_NEWEST" || true)" \
            $(ls -d "$HOME"/.pyenv/versions/"$PY_NEWEST"*/bin/"python$PY_NEWEST" 2>/dev/null | sort -V -r || true); do
  if [ -n "$cand" ] && "$cand" -c 'import venv' >/dev/null 2>&1; then PYBIN=$cand; break; fi
done
if [ -z "$PYBIN" ]; then
  echo "newest-torch run: skipped: no python$PY_NEWEST on PATH or under pyenv (install Python $PY_NEWEST to enable it)"
  [ "${CI:-}" = "true" ] && exit 1  # CI must run it
  exit 0
fi

VENV="$CACHE/py$PY_NEWEST-torch$TORCH_NEWEST"
VPY="$VENV/bin/python"
if [ ! -f "$VENV/.deps-stamp" ]; then
  echo "newest-torch run: creating $VENV (torch $TORCH_NEWEST; a multi-GB download the first time)"
  rm -rf "$VENV"
  mkdir -p "$CACHE"
  "$PYBIN" -m venv "$VENV"
  "$VPY" -m pip install -q --upgrade pip setuptools wheel ninja
  "$VPY" -m pip install -q "torch==$TORCH_NEWEST"
  "$VPY" -m pip install -q "pytest>=8" "hypothesis>=6.100" numpy expecttest matplotlib tqdm
  touch "$VENV/.deps-stamp"
fi

SRC=build/newest
rm -rf "$SRC"
mkdir -p "$SRC"
git ls-files -co --exclude-standard -z | xargs -0 cp -P --parents -t "$SRC"
# The copy is neither beside ../shared nor holds .cann-sources: point the NPU checks at the tree the clone sees.
if [ -z "${ASCEND_SDK_DIR:-}" ]; then
  for sdk in ../shared/ascend-sdk .cann-sources/ascend-sdk; do
    if [ -d "$sdk/asc-devkit" ]; then export ASCEND_SDK_DIR="$(cd "$sdk" && pwd)"; break; fi
  done
fi
cd "$SRC"
echo "newest-torch run: Python $("$VPY" -c 'import platform; print(platform.python_version())'), torch $("$VPY" -c 'import torch; print(torch.__version__)')"
"$VPY" -m pip install -q --no-build-isolation --no-deps -e .  # installed: some tests read its metadata
"$VPY" -m pytest -q tests
