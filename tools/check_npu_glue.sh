#!/usr/bin/env bash
# Compile check of the NPU glue (csrc/npu/) against torch's headers and those shipped in the torch-npu wheel (acl/
# among them: the launch API and its batch schedule mode). The wheel is downloaded (never installed: without CANN it
# breaks `import torch`) and only its headers are unpacked, into .npu_headers/. The core count is read through CANN's
# platform header, which the wheel lacks: it comes from ascend-sdk (asc-devkit, runtime). Syntax and types only:
# nothing is linked, nothing runs.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
. tools/npu_headers.sh
npu_inc=$(npu_headers)
torch_inc=$("$PY" -c "from torch.utils.cpp_extension import include_paths; print(' '.join('-I' + p for p in include_paths()))")
py_inc=$("$PY" -c "import sysconfig; print('-I' + sysconfig.get_paths()['include'])")
. tools/ascend_sdk_env.sh
platform_inc=""
[ -n "$ASCEND_SDK" ] && platform_inc="-isystem $ASCEND_SDK/asc-devkit/include/utils -isystem $ASCEND_SDK/runtime/pkg_inc"
for src in csrc/npu/*.cpp; do
  if [ -z "$platform_inc" ] && grep -q "platform_ascendc.h" "$src"; then
    echo "npu glue compile check: skipped: $src needs CANN's platform header from ascend-sdk (run bash tools/fetch_cann_sources.sh, or set ASCEND_SDK_DIR)"
    continue
  fi
  g++ -std=c++17 -fsyntax-only -w -D_GLIBCXX_USE_CXX11_ABI=1 $torch_inc $py_inc -I"$npu_inc" $platform_inc -Icsrc \
    "$src"
  echo "npu glue compile check: $src OK"
done
