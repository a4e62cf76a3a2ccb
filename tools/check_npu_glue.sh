#!/usr/bin/env bash
# Compile check of the NPU glue (csrc/npu/) against torch's headers and those shipped in the torch-npu wheel.
# The wheel is downloaded (never installed: without CANN it breaks `import torch`) and only its headers are
# unpacked, into .npu_headers/. Syntax and types only: nothing is linked, nothing runs.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
dest=.npu_headers
if [ ! -d "$dest/torch_npu/include" ]; then
  mkdir -p "$dest/wheel"
  "$PY" -m pip download -q --no-deps --only-binary=:all: "torch-npu==2.13.0" -d "$dest/wheel"
  "$PY" -c "import glob, zipfile; z = zipfile.ZipFile(glob.glob('$dest/wheel/torch_npu-*.whl')[0]); [z.extract(n, '$dest') for n in z.namelist() if n.startswith('torch_npu/include/')]"
  rm -rf "$dest/wheel"
fi
torch_inc=$("$PY" -c "from torch.utils.cpp_extension import include_paths; print(' '.join('-I' + p for p in include_paths()))")
py_inc=$("$PY" -c "import sysconfig; print('-I' + sysconfig.get_paths()['include'])")
for src in csrc/npu/*.cpp; do
  g++ -std=c++17 -fsyntax-only -w -D_GLIBCXX_USE_CXX11_ABI=1 $torch_inc $py_inc -I"$dest/torch_npu/include" -Icsrc "$src"
  echo "npu glue compile check: $src OK"
done
