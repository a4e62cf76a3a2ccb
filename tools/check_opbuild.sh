#!/usr/bin/env bash
# Runs CANN's opbuild on our OpDef as the op package build does (OPS_PRODUCT_NAME=ascend950), with opbuild built
# from CANN's open sources by ascend-sdk/opbuild (found by tools/ascend_sdk_env.sh), into build/opbuild,
# and checks what it generated:
#  - the ops-info (ini and JSON), the aclnn API header and the op proto against the op's contract
#    (tests/opbuild/check_generated.py, written from the design, not from opbuild's output);
#  - the kernel build's configuration generated from that ops-info (csrc/npu/op_package/kernel_build_config.py)
#    against ops-cv's layout for this op and our kernel's tiling keys (tests/opbuild/check_kernel_config.py);
#  - the generated aclnn_*.cpp compiles with -Wall -Wextra -Werror and defines exactly the two aclnn functions;
#  - the seed's aclnn example for our op (examples/aclnn/) compiles against the generated header, the public aclnn
#    header (opbase) and the acl runtime headers of the torch-npu wheel.
# Without the SDK, protoc/libprotobuf-dev or python3: one line "opbuild: skipped: <why>", exit 0.
set -euo pipefail
cd "$(dirname "$0")/.."
. tools/ascend_sdk_env.sh
skip_without_sdk "opbuild: skipped:"
[ -f "$ASCEND_SDK/opbuild/Makefile" ] || { echo "opbuild: skipped: $ASCEND_SDK has no opbuild/"; exit 0; }
missing=()
command -v protoc >/dev/null 2>&1 || missing+=(protobuf-compiler)
[ -f /usr/include/google/protobuf/message.h ] || missing+=(libprotobuf-dev)
command -v python3 >/dev/null 2>&1 || missing+=(python3)
if (( ${#missing[@]} )); then
  echo "opbuild: skipped: missing Debian packages: ${missing[*]} (apt-get install -y ${missing[*]})"
  exit 0
fi
O=build/opbuild
src=$(cd "$(cann_sources)" && pwd)
mkdir -p "$O"
if ! make -s -j2 -f "$ASCEND_SDK/opbuild/Makefile" S="$src" O="$O" \
    OPDEF_SRCS="csrc/op_host/cann/resize_bicubic_v2_grad_def.cpp" GEN_ENV="OPS_PRODUCT_NAME=ascend950" \
    gen json aclnn-compile > "$O.log" 2>&1; then
  grep -v -E "pragma message|is deprecated|^ +[0-9]* \| |^ +\| +\^|^In file included from|^ +from " "$O.log" | tail -30
  echo "opbuild: FAILED (full log: $O.log)"
  exit 1
fi
echo "opbuild: generated from csrc/op_host/cann/resize_bicubic_v2_grad_def.cpp into $O/gen:"
python3 tests/opbuild/check_generated.py "$O/gen"
# The kernel build's configuration, generated from this ops-info as the package build does (csrc/npu/op_package).
python3 csrc/npu/op_package/kernel_build_config.py --ops-info "$O/gen/aic-ascend950-ops-info.ini" \
  --tiling-header csrc/common/resize_bicubic_v2_grad_tiling_data.h --kernel-include csrc --out "$O/kernel_config" \
  --autogen "$O/gen" > /dev/null
# CANN's own custom-op build scripts check it too where asc-devkit is at hand: CANN_ASC_DEVKIT, else the git cache
# tools/fetch_cann_sources.sh keeps (its scripts at the pinned commit).
devkit_cache=.cann-sources/.git-cache/asc-devkit.git
if [ -z "${CANN_ASC_DEVKIT:-}" ] && [ -d "$devkit_cache" ]; then
  rm -rf "$O/asc-devkit" && mkdir -p "$O/asc-devkit"
  git --git-dir="$devkit_cache" archive "$(awk '$1 == "asc-devkit" {print $3}' tools/cann_sources/repos.txt)" \
    cmake/asc/fwk_modules/util | tar -x -C "$O/asc-devkit" && export CANN_ASC_DEVKIT=$PWD/$O/asc-devkit
fi
python3 tests/opbuild/check_kernel_config.py "$O/kernel_config" "$O/gen" "$O/gen/aic-ascend950-ops-info.ini" "$PWD/csrc"
# The generated source: exactly the two aclnn functions defined (Nnopbase* come from libnnopbase on a toolkit).
nm -C --defined-only "$O"/aclnn_obj/*.o | awk '$2 == "T" {print $3}' | sort > "$O/aclnn_defined.txt"
printf '%s\n' aclnnResizeBicubicV2Grad aclnnResizeBicubicV2GradGetWorkspaceSize > "$O/aclnn_expected.txt"
if ! diff -u "$O/aclnn_expected.txt" "$O/aclnn_defined.txt"; then
  echo "opbuild: FAILED: the generated aclnn source defines other functions than the two aclnn ones"
  exit 1
fi
echo "  ok: aclnn_resize_bicubic_v2_grad.cpp compiles with -Wall -Wextra -Werror; defines $(tr '\n' ' ' < "$O/aclnn_defined.txt")"
. tools/npu_headers.sh
g++ -std=c++17 -fsyntax-only -Wall -Wextra -Werror -I"$O/gen" -isystem "$(npu_headers)" \
  -isystem "$src/opbase/include/nnopbase" examples/aclnn/resize_bicubic_v2_grad_example.cpp
echo "  ok: examples/aclnn/resize_bicubic_v2_grad_example.cpp compiles against the generated aclnn header"
echo "opbuild: passed (CANN's op_build from $ASCEND_SDK/opbuild)"
