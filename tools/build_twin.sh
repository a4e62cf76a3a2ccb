#!/usr/bin/env bash
# Builds build/twin/rbg_twin: our Ascend C kernels compiled against the real Ascend C headers in CPU-debug
# mode and linked with the SDK's twin runtime (twin/rt.cpp: one std::thread per SIMT thread, serialised
# atomics) and its half/bfloat16 implementations, as ascend-sdk's README §2 describes. Rebuilds only when an
# input changed. Prints the binary's path; prints "skip: <why>" and exits 0 when there is no SDK.
set -euo pipefail
cd "$(dirname "$0")/.."
. tools/ascend_sdk_env.sh
skip_without_sdk "skip:"
out=build/twin
mkdir -p "$out"
CXX=${CXX:-g++}
A=$ASCEND_SDK/asc-devkit
FLAGS="-std=c++17 -O1 -DSHIM_RUNTIME $KDEFS $KINC -isystem $A/tests/api/simt_api/common_simt -Icsrc"
WARN="-Wall -Wextra -Werror"
# name|source|flags: SDK sources are compiled as they are (no -Werror); ours with warnings as errors.
units=(
  "driver|csrc/twin/ascendc_twin_main.cpp|$WARN"
  "tiling|csrc/op_host/resize_bicubic_v2_grad_tiling.cpp|$WARN"
  "checks|csrc/op_host/resize_bicubic_v2_grad_checks.cpp|$WARN"
  "rt|$ASCEND_SDK/twin/rt.cpp|-w"
  "fp16|$ASCEND_SDK/asc-tools/cpudebug/src/acl_stub/kernel_fp16.cpp|-w"
  "bf16|$A/tests/api/simt_api/common_simt/kernel_bf16.cpp|-w"
)
# One fingerprint of every input (our sources and headers, the SDK's version, the flags).
stamp=$( { echo "$CXX $FLAGS"; cat "$ASCEND_SDK/SOURCES.txt" 2>/dev/null;
           find csrc/twin csrc/op_kernel csrc/op_host csrc/common tools/build_twin.sh tools/ascend_sdk_env.sh \
             -type f | sort | xargs cat; } | sha256sum | cut -d' ' -f1)
if [ -x "$out/rbg_twin" ] && [ "$(cat "$out/stamp" 2>/dev/null)" = "$stamp" ]; then
  echo "$PWD/$out/rbg_twin"
  exit 0
fi
pids=()
objs=()
for u in "${units[@]}"; do
  IFS='|' read -r name src extra <<< "$u"
  objs+=("$out/$name.o")
  ( $CXX $FLAGS $extra -c "$src" -o "$out/$name.o" > "$out/$name.log" 2>&1 \
      || { echo "build_twin: $name failed:" >&2; grep -E "error" "$out/$name.log" | head -20 >&2; exit 1; } ) &
  pids+=($!)
  if (( ${#pids[@]} == 2 )); then wait "${pids[0]}" || fail=1; pids=("${pids[1]}"); fi
done
for p in "${pids[@]}"; do wait "$p" || fail=1; done
[ -z "${fail:-}" ] || exit 1
$CXX -pthread "${objs[@]}" -o "$out/rbg_twin"
echo "$stamp" > "$out/stamp"
echo "$PWD/$out/rbg_twin"
