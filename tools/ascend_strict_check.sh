#!/usr/bin/env bash
# The strict compile of `make ascend-check`: every kernel entry (the direct launch; the op-package entry for each
# DTYPE_GRADS) compiled by clang against tools/ascendc_strict/, a stand-in for the Ascend C headers in which the
# device's checkable rules are real (its kernel_operator.h lists them): __gm__ and __ubuf__ are address spaces,
# LAUNCH_BOUND takes a constant in [1, 2048], VF launches pass exactly the VF's built-in or global-pointer parameter
# types, and kernel code is freestanding. Ascend C's CPU-debug mode, which the rest of ascend-check compiles against,
# erases all of these. Any error or warning fails the check.
#
#   bash tools/ascend_strict_check.sh [SOURCE_DIR]    # default csrc; the tests pass copies with a planted fault
#
# Without clang++ (Debian's `clang`, which .ci/run installs under CI) it says so in one line and exits 0.
set -euo pipefail
cd "$(dirname "$0")/.."
src=${1:-csrc}
CLANG=${CLANG:-clang++}
if ! command -v "$CLANG" >/dev/null 2>&1; then
  echo "strict compile: skipped: no $CLANG (apt-get install clang)"
  exit 0
fi
# aarch64: a target on which clang 14 has a 16-bit float compiler type for half.
FLAGS="-target aarch64-linux-gnu -ffreestanding -nostdlibinc -std=c++17 -fsyntax-only -Wall -Wextra -Wconversion
  -Wsign-conversion -Wdouble-promotion -Werror -isystem tools/ascendc_strict -I$src"
entry=$src/op_kernel/resize_bicubic_v2_grad.cpp
fail=0
for unit in "direct launch|" "op-package entry, DTYPE_GRADS=float|-DRBG_CANN_OP_PACKAGE -DDTYPE_GRADS=float" \
  "op-package entry, DTYPE_GRADS=half|-DRBG_CANN_OP_PACKAGE -DDTYPE_GRADS=half" \
  "op-package entry, DTYPE_GRADS=bfloat16_t|-DRBG_CANN_OP_PACKAGE -DDTYPE_GRADS=bfloat16_t"; do
  IFS='|' read -r name extra <<< "$unit"
  # shellcheck disable=SC2086
  if log=$("$CLANG" $FLAGS $extra "$entry" 2>&1); then
    echo "  ok (strict): $name"
  else
    echo "  FAILED (strict): $name"
    echo "$log" | grep -E "error|warning" | head -20
    fail=1
  fi
done
if [ "$fail" = 1 ]; then
  echo "strict compile: FAILED ($("$CLANG" --version | head -1))"
  exit 1
fi
echo "strict compile: every kernel entry keeps the device's rules ($("$CLANG" --version | head -1))"
