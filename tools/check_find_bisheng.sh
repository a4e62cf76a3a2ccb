#!/usr/bin/env bash
# `make ascend-check`: the bisheng lookup of the NPU builds (csrc/npu/find_bisheng.cmake), run alone (cmake -P, no
# torch, no toolkit) against fake toolkit trees: the arch-specific layout, the compiler/ layout, both (the
# arch-specific one wins), and one with only another arch's compiler (not taken).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v cmake >/dev/null 2>&1; then
  echo "find_bisheng check: skipped: no cmake"
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
arch=$(uname -m)
other=$([ "$arch" = aarch64 ] && echo x86_64 || echo aarch64)
fake() {  # fake TREE RELATIVE_BIN...
  local tree=$tmp/$1
  shift
  mkdir -p "$tree"
  for bin in "$@"; do
    mkdir -p "$tree/$(dirname "$bin")" && printf '#!/bin/sh\n' > "$tree/$bin" && chmod +x "$tree/$bin"
  done
  echo "$tree"
}
lookup() { cmake -DASCEND_HOME_PATH="$1" -P csrc/npu/find_bisheng.cmake 2>&1; }
expect() {  # expect TREE WANTED
  local got
  got=$(lookup "$1") || { echo "  FAILED: $1: $got"; exit 1; }
  [ "$got" = "$2" ] || { echo "  FAILED: $1: found '$got', wanted '$2'"; exit 1; }
  echo "  ok: ${1#"$tmp"/} -> ${2#"$1"/}"
}
t=$(fake arch_layout "$arch-linux/ccec_compiler/bin/bisheng")
expect "$t" "$t/$arch-linux/ccec_compiler/bin/bisheng"
t=$(fake compiler_layout "compiler/ccec_compiler/bin/bisheng")
expect "$t" "$t/compiler/ccec_compiler/bin/bisheng"
t=$(fake both "$arch-linux/ccec_compiler/bin/bisheng" "compiler/ccec_compiler/bin/bisheng")
expect "$t" "$t/$arch-linux/ccec_compiler/bin/bisheng"
t=$(fake foreign "$other-linux/ccec_compiler/bin/bisheng")
if out=$(lookup "$t"); then
  echo "  FAILED: a toolkit with only $other's compiler gave '$out'"
  exit 1
fi
echo "  ok: foreign -> not found ($other-linux only)"
echo "find_bisheng check: both toolkit layouts found, a foreign arch's compiler refused"
