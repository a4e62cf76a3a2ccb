#!/usr/bin/env bash
# Runs our CANN op-host code (csrc/op_host/cann/: the IMPL_OP_OPTILING tiling + TilingParse and the
# IMPL_OP_INFERSHAPE InferShape + InferDataType) under CANN's own op-host UT framework, built from CANN's open
# sources by ascend-sdk/ophost-ut (found by tools/ascend_sdk_env.sh). The tests are tests/op_host_ut/*:
# gtest in CANN's UT style, reaching our functions through CANN's op-impl space registry.
# The framework build goes to build/ophost-ut and is reused (~1 min the first time on 2 cores, then ~20 s).
# Needs Debian's libprotobuf-dev protobuf-compiler nlohmann-json3-dev libgtest-dev (.ci/run installs them under CI);
# without them, or without the SDK, it prints one line "op-host UT: skipped: <why>" and exits 0.
set -euo pipefail
cd "$(dirname "$0")/.."
. tools/ascend_sdk_env.sh
skip_without_sdk "op-host UT: skipped:"
UT=$ASCEND_SDK/ophost-ut
[ -f "$UT/Makefile" ] || { echo "op-host UT: skipped: $ASCEND_SDK has no ophost-ut/"; exit 0; }
missing=()
command -v protoc >/dev/null 2>&1 || missing+=(protobuf-compiler)
[ -f /usr/include/google/protobuf/message.h ] || missing+=(libprotobuf-dev)
[ -f /usr/include/nlohmann/json.hpp ] || missing+=(nlohmann-json3-dev)
[ -f /usr/src/googletest/googletest/src/gtest-all.cc ] || missing+=(libgtest-dev)
if (( ${#missing[@]} )); then
  echo "op-host UT: skipped: missing Debian packages: ${missing[*]} (apt-get install -y ${missing[*]})"
  exit 0
fi

O=build/ophost-ut
src=$(cann_sources)
mkdir -p "$O"

# The framework's Makefile tracks each object's own source only: objects older than a header they include go.
newest_header=$(ls -t csrc/op_host/*.h csrc/common/*.h tests/op_host_ut/*.h | head -n 1)
[ -d "$O/op" ] && find "$O/op" -name '*.o' ! -newer "$newest_header" -delete

set +e
make -s -j2 -f "$UT/Makefile" S="$src" O="$O" \
  OP_CXXFLAGS="-std=c++17 -O1 -g0 -fPIC -Wall -Wextra -Werror" \
  TILING_SRCS="csrc/op_host/cann/resize_bicubic_v2_grad_tiling_cann.cpp" \
  PROTO_SRCS="csrc/op_host/cann/resize_bicubic_v2_grad_infershape.cpp" \
  SRCS="csrc/op_host/resize_bicubic_v2_grad_tiling.cpp csrc/op_host/resize_bicubic_v2_grad_checks.cpp" \
  OP_INC="-Icsrc" TEST_INC="-isystem $src/ops-cv/tests/ut/common -Itests/op_host_ut" \
  TESTS="$(ls tests/op_host_ut/*.cpp | tr '\n' ' ')" \
  GTEST_ARGS="${GTEST_ARGS:-}" run > "$O/run.log" 2>&1
status=$?
set -e
# gtest's own output; CANN's headers' deprecation notes and compiler context lines left out.
# The faker's default SoC string is unknown to PlatformAscendC, which logs that at ERROR level (CANN's own UTs
# expect the (uint32_t)-1 system workspace it then gives): those lines are left out too.
grep -v -E "pragma message|ge_api_types.h is deprecated|^ +[0-9]* \| |^ +\| +\^|^In file included from|^ +from |^ $|\[(SocVersionStrMap|GetCurNpuArch|GetLibApiWorkSpaceSize)\]" "$O/run.log" || true
if [ "$status" -ne 0 ]; then
  echo "op-host UT: FAILED (full log: $O/run.log)"
  exit 1
fi
echo "op-host UT: passed ($O/ut, CANN's op-host UT framework from $UT)"
