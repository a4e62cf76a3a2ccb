#!/usr/bin/env bash
# `make ascend-check` (run by `make test` and CI): compile every NPU source of the project against real CANN
# headers. Warnings in our files are errors.
#  - Always: the strict compile of the kernel entries by clang with the device's address spaces and VF rules made real
#    (ascend_strict_check.sh), and the bisheng lookup of the NPU builds against fake toolkit trees
#    (check_find_bisheng.sh).
#  - With a CANN toolkit (ASCEND_HOME_PATH with bisheng): the kernel entries with bisheng (unverified here:
#    no toolkit was available to this project).
#  - Else with the public CANN headers of ascend-sdk (found by tools/ascend_sdk_env.sh): every
#    kernel entry in Ascend C's CPU-debug mode (direct launch, all three dtypes; op-package entry for each
#    DTYPE_GRADS), then the op package's host libraries (tiling and infershape adapters, graph proto, OpDef)
#    built and checked by check_op_package.sh, with the host g++; then the op-host UTs (tests/op_host_ut) run
#    under CANN's own op-host UT framework (op_host_ut.sh); CANN's opbuild runs on the OpDef first and its output is
#    checked (check_opbuild.sh), and the package's aclnn library is built from it.
#  - Else: one line saying what was skipped and why, exit 0.
set -euo pipefail
cd "$(dirname "$0")/.."
out=build/ascend-check
mkdir -p "$out"
CXX=${CXX:-g++}
WARN="-Wall -Wextra -Werror"  # the SDK's own headers come in through -isystem, so this judges our files only

bash tools/ascend_strict_check.sh
bash tools/check_find_bisheng.sh

if [ -n "${ASCEND_HOME_PATH:-}" ] && command -v bisheng >/dev/null 2>&1; then
  echo "ascend-check: bisheng from $ASCEND_HOME_PATH"
  for dtype in float half bfloat16_t; do
    bisheng -xasc --npu-arch=dav-3510 -std=c++17 -fsyntax-only $WARN -Icsrc \
      -I"$ASCEND_HOME_PATH/include" -I"$ASCEND_HOME_PATH/compiler/tikcpp/tikcfw" \
      -DRBG_CANN_OP_PACKAGE -DDTYPE_GRADS=$dtype csrc/op_kernel/resize_bicubic_v2_grad.cpp
  done
  bisheng -xasc --npu-arch=dav-3510 -std=c++17 -fsyntax-only $WARN -Icsrc \
    -I"$ASCEND_HOME_PATH/include" csrc/op_kernel/resize_bicubic_v2_grad.cpp
  echo "ascend-check: kernel entries compile with bisheng"
  exit 0
fi

. tools/ascend_sdk_env.sh
skip_without_sdk "ascend-check: skipped: no CANN toolkit (ASCEND_HOME_PATH with bisheng) and"
S=$ASCEND_SDK
KINC="$KINC -Icsrc"

# name|flags|source: one translation unit each, two at a time (~5 s and ~500 MB apiece)
units=(
  "kernel direct launch (float, half, bfloat16)|$KDEFS $KINC|csrc/op_kernel/resize_bicubic_v2_grad.cpp"
  "kernel op-package entry, DTYPE_GRADS=float|$KDEFS $KINC -DRBG_CANN_OP_PACKAGE -DDTYPE_GRADS=float|csrc/op_kernel/resize_bicubic_v2_grad.cpp"
  "kernel op-package entry, DTYPE_GRADS=half|$KDEFS $KINC -DRBG_CANN_OP_PACKAGE -DDTYPE_GRADS=half|csrc/op_kernel/resize_bicubic_v2_grad.cpp"
  "kernel op-package entry, DTYPE_GRADS=bfloat16_t|$KDEFS $KINC -DRBG_CANN_OP_PACKAGE -DDTYPE_GRADS=bfloat16_t|csrc/op_kernel/resize_bicubic_v2_grad.cpp"
)
pids=()
for i in "${!units[@]}"; do
  IFS='|' read -r name flags src <<< "${units[$i]}"
  ( $CXX -std=c++17 -fsyntax-only $WARN $flags "$src" > "$out/unit$i.log" 2>&1 \
      && echo "  ok: $name" || { echo "  FAILED: $name"; grep -E "error|warning" "$out/unit$i.log" | head -20; exit 1; } ) &
  pids+=($!)
  if (( ${#pids[@]} == 2 )); then wait "${pids[0]}" || fail=1; pids=("${pids[1]}"); fi
done
for p in "${pids[@]}"; do wait "$p" || fail=1; done
if [ -n "${fail:-}" ]; then
  echo "ascend-check: FAILED against $S"
  exit 1
fi
echo "ascend-check: every kernel entry compiles against $S (CPU-debug mode, g++ $($CXX -dumpversion))"
bash tools/check_opbuild.sh
bash tools/check_op_package.sh
bash tools/op_host_ut.sh
