# Sourced by ascend_check.sh, build_twin.sh and check_op_package.sh: finds the public CANN headers (ascend-sdk,
# at $ASCEND_SDK_DIR, else ../shared/ascend-sdk, else .cann-sources/ascend-sdk as tools/fetch_cann_sources.sh makes
# it) and sets the flags its README gives. ASCEND_SDK is empty when there is none; skip_without_sdk then ends the
# calling script. The SDK's headers come in through -isystem, so warnings flags judge our files only.
if [ -n "${ASCEND_SDK_DIR:-}" ]; then
  ASCEND_SDK=$ASCEND_SDK_DIR
elif [ -d "$(pwd)/../shared/ascend-sdk/asc-devkit" ]; then
  ASCEND_SDK=$(pwd)/../shared/ascend-sdk
else
  ASCEND_SDK=$(pwd)/.cann-sources/ascend-sdk
fi
if [ -d "$ASCEND_SDK/asc-devkit" ]; then
  ASCEND_SDK=$(cd "$ASCEND_SDK" && pwd)
  # Ascend C in its CPU-debug mode, arch35 (Ascend 950)
  KDEFS="-DASCENDC_CPU_DEBUG=1 -D__CCE_KT_TEST__=1 -D__NPU_ARCH__=3510 -D__CCE_AICORE__=310 -D__DAV_C310__ -D__DAV_C310_VEC__ -DASCENDC_DEBUG=1"
  KINC=""
  for d in shim _aliases asc-devkit asc-devkit/include asc-devkit/include/basic_api asc-devkit/include/simt_api \
    asc-devkit/include/utils asc-devkit/include/adv_api asc-devkit/impl asc-devkit/impl/basic_api \
    asc-devkit/impl/simt_api asc-devkit/impl/utils asc-tools/cpudebug/include; do KINC="$KINC -isystem $ASCEND_SDK/$d"; done
  # CANN op-host code (metadef / ge / runtime)
  HINC=""
  for d in metadef/inc/external metadef/inc/external/asc metadef/inc metadef/pkg_inc ge/inc/graph_metadef/external \
    ge/inc/graph_metadef ge/inc/external runtime/pkg_inc runtime/include runtime/include/dfx runtime/include/external \
    _aliases asc-devkit/include/utils asc-devkit/include/adv_api asc-devkit/include libboundscheck/include; do
    HINC="$HINC -isystem $ASCEND_SDK/$d"
  done
else
  ASCEND_SDK=""
fi

# Ends the calling script (exit 0) with one line, "<prefix> no ascend-sdk at <dir> ...", when there is no SDK.
skip_without_sdk() {
  [ -n "$ASCEND_SDK" ] && return 0
  echo "$1 no CANN sources (ascend-sdk) at ${ASCEND_SDK_DIR:-../shared/ascend-sdk or .cann-sources/ascend-sdk}: run bash tools/fetch_cann_sources.sh (needs GitHub), or set ASCEND_SDK_DIR"
  exit 0
}

# Prints the path of a private copy of ascend-sdk's CANN sources (ophost-ut/src: what the op-host UT framework and
# opbuild are built from), made once in build/cann-src. The shared copy may hold a symbolic link flattened into a
# file whose whole text is the relative path of its target: such files are replaced by their targets.
cann_sources() {
  local src=build/cann-src from="$ASCEND_SDK/ophost-ut/src" f target
  if [ "$(cat "$src/.from" 2>/dev/null)" != "$from" ]; then
    rm -rf "$src"
    mkdir -p build
    cp -r "$from" "$src"
    chmod -R u+w "$src"
    find "$src" -type f -size -256c | while read -r f; do
      target=$(cat "$f")
      case "$target" in ../*|./*) [ -f "$(dirname "$f")/$target" ] && cp "$(dirname "$f")/$target" "$f" ;; esac
    done
    echo "$from" > "$src/.from"
  fi
  echo "$src"
}
