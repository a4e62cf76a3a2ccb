#!/usr/bin/env bash
# Builds the CANN-shaped op package's host libraries (csrc/npu/op_package) with the host g++ against the
# public CANN headers of ascend-sdk, then checks what CANN's build would require of them:
#  - each library is built (tiling: OP_TILING_LIB, proto: OP_PROTO_LIB, opbuild's input: the OpDef alone);
#  - the old C++ ABI (-D_GLIBCXX_USE_CXX11_ABI=0): no std::__cxx11 symbol anywhere;
#  - hidden visibility: none of our own symbols (rbg::, optiling::, ops::) is exported;
#  - the OpDef is in the opbuild library only, never in the tiling or proto library.
#  - the aclnn library (libcust_opapi.so), built from what opbuild generated (check_opbuild.sh, build/opbuild/gen),
#    exports exactly the two aclnn functions; Nnopbase* stay undefined (libnnopbase comes with a toolkit).
#  - the toolkit path configures (against a stand-in toolkit tree): the kernel binaries come from CANN's custom-op
#    build on the generated kernel configuration, installed as the runtime loads them.
# CANN's libraries are not linked (none here): their symbols stay undefined. Run by ascend_check.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
. tools/ascend_sdk_env.sh
skip_without_sdk "op-package check: skipped:"
out=build/op_package_check
gen=build/opbuild/gen
opapi_args=()
[ -f "$gen/aclnn_resize_bicubic_v2_grad.cpp" ] && opapi_args=(-DRBG_OPBUILD_GEN="$PWD/$gen")
cmake -S csrc/npu/op_package -B "$out" -G Ninja -DRBG_ASCEND_SDK="$ASCEND_SDK" -DCMAKE_CXX_COMPILER="${CXX:-g++}" \
  "${opapi_args[@]}" \
  > "$out.configure.log" 2>&1 || { cat "$out.configure.log"; exit 1; }
cmake --build "$out" -j 2 > "$out.build.log" 2>&1 || { grep -E "error|warning" "$out.build.log" | head -30; exit 1; }
fail=0
check() { if eval "$2"; then echo "  ok: $1"; else echo "  FAILED: $1"; fail=1; fi; }
# Symbol tables to files first: `nm | grep -q` would let grep's early exit fail nm under pipefail.
for lib in cust_opmaster_rt2.0 cust_opsproto_rt2.0 ascend_all_ops; do
  f="$out/lib$lib.so"
  check "lib$lib.so: built" "[ -f '$f' ]" || continue
  nm -C "$f" > "$out/$lib.all.txt"
  nm -DC --defined-only "$f" > "$out/$lib.exported.txt"
  check "lib$lib.so: old C++ ABI (no __cxx11 symbol)" "! grep -q __cxx11 '$out/$lib.all.txt'"
  check "lib$lib.so: exports none of our symbols" "! grep -qE ' (rbg|optiling|ops)::' '$out/$lib.exported.txt'"
done
for lib in cust_opmaster_rt2.0 cust_opsproto_rt2.0; do
  check "lib$lib.so: no OpDef" "! grep -q 'ops::ResizeBicubicV2Grad' '$out/$lib.all.txt'"
done
check "libascend_all_ops.so: holds the OpDef" "grep -q 'ops::ResizeBicubicV2Grad' '$out/ascend_all_ops.all.txt'"
check "libcust_opmaster_rt2.0.so: holds the tiling" "grep -q 'rbg::compute_tiling' '$out/cust_opmaster_rt2.0.all.txt'"
check "libcust_opsproto_rt2.0.so: holds InferShape" "grep -q 'InferShapeResizeBicubicV2Grad' '$out/cust_opsproto_rt2.0.all.txt'"
if [ ${#opapi_args[@]} -gt 0 ]; then
  f="$out/libcust_opapi.so"
  check "libcust_opapi.so: built from opbuild's aclnn_resize_bicubic_v2_grad.cpp" "[ -f '$f' ]"
  nm -DC --defined-only "$f" | awk '$2 == "T" {print $3}' | sort > "$out/opapi.exported.txt"
  printf '%s\n' aclnnResizeBicubicV2Grad aclnnResizeBicubicV2GradGetWorkspaceSize > "$out/opapi.expected.txt"
  check "libcust_opapi.so: exports exactly the two aclnn functions" "diff -q '$out/opapi.expected.txt' '$out/opapi.exported.txt' >/dev/null"
  nm -DC --undefined-only "$f" > "$out/opapi.undefined.txt"
  check "libcust_opapi.so: Nnopbase* left to libnnopbase (undefined here)" "grep -q ' Nnopbase' '$out/opapi.undefined.txt'"
  nm -C "$f" > "$out/opapi.all.txt"
  check "libcust_opapi.so: old C++ ABI (no __cxx11 symbol)" "! grep -q __cxx11 '$out/opapi.all.txt'"
else
  echo "  skipped: libcust_opapi.so (no opbuild output in $gen: tools/check_opbuild.sh makes it)"
fi
# The toolkit path, configured against a stand-in toolkit tree (the tools it looks up, empty): its kernels are built
# by CANN's custom-op build from the configuration kernel_build_config.py generates (which check_opbuild.sh checks),
# and installed where the runtime loads them.
fake=$out.fake-toolkit
rm -rf "$fake"
mkdir -p "$fake/tk/tools/opbuild" "$fake/tk/cmake/asc/fwk_modules/util"
touch "$fake/tk/tools/opbuild/op_build" "$fake/tk/cmake/asc/fwk_modules/util/"{parse_ini_to_json,ascendc_compile_kernel}.py
chmod +x "$fake/tk/tools/opbuild/op_build"
if cmake -S csrc/npu/op_package -B "$fake/build" -G Ninja -DASCEND_HOME_PATH="$PWD/$fake/tk" \
    -DCMAKE_CXX_COMPILER="${CXX:-g++}" > "$fake.log" 2>&1; then
  ninja -C "$fake/build" -t commands rbg_kernels > "$fake/commands.txt"
  check "toolkit path: kernel binaries by CANN's ascendc_compile_kernel.py from kernel_build_config.py's output" \
    "grep -q 'kernel_build_config.py --ops-info' '$fake/commands.txt' && grep -q 'ascendc_compile_kernel.py --op-type=ResizeBicubicV2Grad' '$fake/commands.txt' && grep -q 'ascendc_ops_config.py' '$fake/commands.txt'"
  check "toolkit path: installs kernel/ascend950/ and kernel/config/ascend950/" \
    "grep -q 'op_impl/ai_core/tbe/kernel/ascend950' '$fake/build/cmake_install.cmake' && grep -q 'op_impl/ai_core/tbe/kernel/config' '$fake/build/cmake_install.cmake'"
else
  check "toolkit path: configures against a stand-in toolkit tree ($fake.log)" false
fi
[ "$fail" = 0 ] || { echo "op-package check: FAILED"; exit 1; }
echo "op-package check: host libraries built with $(${CXX:-g++} -dumpversion | sed 's/^/g++ /') against $ASCEND_SDK (CANN libraries not linked)"
