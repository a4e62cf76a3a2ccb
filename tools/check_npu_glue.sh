#!/usr/bin/env bash
# Compile check of the NPU glue (csrc/npu/) against torch's headers and those shipped in the torch-npu wheel.
# The wheel is downloaded (never installed: without CANN it breaks `import torch`) and only its headers are
# unpacked, into .npu_headers/. Syntax and types only: nothing is linked, nothing runs.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
. tools/npu_headers.sh
npu_inc=$(npu_headers)
torch_inc=$("$PY" -c "from torch.utils.cpp_extension import include_paths; print(' '.join('-I' + p for p in include_paths()))")
py_inc=$("$PY" -c "import sysconfig; print('-I' + sysconfig.get_paths()['include'])")
for src in csrc/npu/*.cpp; do
  g++ -std=c++17 -fsyntax-only -w -D_GLIBCXX_USE_CXX11_ABI=1 $torch_inc $py_inc -I"$npu_inc" -Icsrc "$src"
  echo "npu glue compile check: $src OK"
done
