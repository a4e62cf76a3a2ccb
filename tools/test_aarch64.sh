#!/usr/bin/env bash
# The test suite on aarch64 (the Kunpeng hosts of Ascend servers), under qemu-user on this x86_64 machine.
#
# Set up once, in a cache folder outside the clone ($RBG_CACHE_DIR, else ~/.cache/torch-resize-bicubic), and kept:
# - a sysroot of Debian's arm64 CPython 3.11 and the libraries it and torch load (apt-get download + dpkg -x);
# - a venv-shaped folder whose site-packages holds PyPI's aarch64 wheels (torch 2.13.0, a CUDA build: its nvidia
#   packages load at import, so they come too), installed by this machine's pip for the aarch64 platform;
# - bin/python, a script that starts that CPython under qemu-aarch64-static. It is sys.executable there, so the
#   suite's subprocesses come back through qemu (binfmt_misc is not needed).
# The package is then cross-built (the x86_64 aarch64-linux-gnu g++ and ninja run natively) from a copy of the
# working tree in build/aarch64, and the suite runs there with RBG_EMULATED_AARCH64=1: the tests marked
# `no_emulation` (timing, peak RSS, ...) are deselected, each reason printed (tests/conftest.py).
set -euo pipefail
cd "$(dirname "$0")/.."
TORCH_A64=${TORCH_A64:-2.13.0}
CACHE=${RBG_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/torch-resize-bicubic}
ENV_DIR="$CACHE/aarch64-py3.11-torch$TORCH_A64"
SYSROOT="$ENV_DIR/sysroot"
VENV="$ENV_DIR/venv"
HOST_PY=${PY:-python3}

skip() {
  echo "aarch64 run: skipped: $1"
  [ "${CI:-}" = "true" ] && exit 1  # CI must run it
  exit 0
}
command -v qemu-aarch64-static >/dev/null || skip "no qemu-aarch64-static (apt-get install qemu-user-static)"
command -v aarch64-linux-gnu-g++ >/dev/null || skip "no aarch64 cross compiler (apt-get install g++-aarch64-linux-gnu)"
command -v ninja >/dev/null || skip "no ninja on PATH (apt-get install ninja-build)"
dpkg --print-foreign-architectures | grep -qx arm64 ||
  skip "dpkg knows no arm64 packages (as root: dpkg --add-architecture arm64 && apt-get update)"

# Debian's arm64 CPython and what it and torch's libraries load; the -dev packages for the extension's headers.
DEBS="python3.11 python3.11-minimal libpython3.11 libpython3.11-minimal libpython3.11-stdlib libpython3.11-dev
  libc6 libc6-dev linux-libc-dev libcrypt1 libcrypt-dev libgcc-s1 libstdc++6 libgomp1 libexpat1 libexpat1-dev
  zlib1g zlib1g-dev libbz2-1.0 liblzma5 libffi8 libssl3 libsqlite3-0 libncursesw6 libtinfo6 libreadline8 libuuid1
  libdb5.3 libnsl2 libnsl-dev libtirpc3 libtirpc-dev libcom-err2 libgssapi-krb5-2 libk5crypto3 libkeyutils1
  libkrb5-3 libkrb5support0"

make_sysroot() {
  local debs="$ENV_DIR/debs"
  rm -rf "$SYSROOT" "$debs"
  mkdir -p "$SYSROOT" "$debs"
  # shellcheck disable=SC2046
  (cd "$debs" && apt-get download -q -o APT::Sandbox::User=root $(for p in $DEBS; do echo "$p:arm64"; done) >/dev/null) ||
    skip "apt-get download of Debian's arm64 packages failed (as root: apt-get update)"
  for deb in "$debs"/*.deb; do dpkg -x "$deb" "$SYSROOT"; done
  rm -rf "$debs"
  # qemu-user shows the host's /proc/cpuinfo and CPU registers, which torch's CPU probe (xbyak_aarch64) cannot
  # read as aarch64 (it crashes at import); qemu looks files up in the sysroot first, so an aarch64 core's go there.
  mkdir -p "$SYSROOT/proc"
  local cpu
  for cpu in 0 1; do
    printf 'processor\t: %d\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp\nCPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x3\nCPU part\t: 0xd0c\nCPU revision\t: 1\n\n' "$cpu"
    mkdir -p "$SYSROOT/sys/devices/system/cpu/cpu$cpu/regs/identification"
    echo 0x00000000413fd0c1 > "$SYSROOT/sys/devices/system/cpu/cpu$cpu/regs/identification/midr_el1"
  done > "$SYSROOT/proc/cpuinfo"
}

make_venv() {
  rm -rf "$VENV"
  mkdir -p "$VENV/bin" "$VENV/lib/python3.11"
  printf 'home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.11\n' > "$VENV/pyvenv.cfg"
  # pip takes one manylinux tag per --platform: every glibc up to Debian 12's 2.36.
  local platforms=(--platform manylinux2014_aarch64) v
  for v in $(seq 17 36); do platforms+=(--platform "manylinux_2_${v}_aarch64"); done
  "$HOST_PY" -m pip install -q --target "$VENV/lib/python3.11/site-packages" "${platforms[@]}" \
    --python-version 3.11 --implementation cp --abi cp311 --only-binary=:all: --no-warn-conflicts \
    "torch==$TORCH_A64" "pytest>=8" "hypothesis>=6.100" numpy expecttest matplotlib tqdm setuptools wheel pip
  cat > "$VENV/bin/python" <<EOF
#!/bin/sh
# aarch64 CPython under qemu-user. This script is sys.executable there (-0 sets argv[0]; pyvenv.cfg beside it).
# An Armv8.2 core without SVE, as Kunpeng 920 hosts have (the sysroot's cpuinfo says the same).
exec qemu-aarch64-static -cpu neoverse-n1 -L "$SYSROOT" -0 "\$0" "$SYSROOT/usr/bin/python3.11" "\$@"
EOF
  # The cross compiler, with the emulated Python's header folder (a path on the emulated side) taken from the
  # sysroot, and the sysroot's multiarch headers (pyconfig.h) searched last. Inductor compiles for -march=native,
  # which a cross compiler cannot know: the emulated core's.
  local tool
  for tool in gcc g++; do
    cat > "$VENV/bin/aarch64-$tool" <<EOF
#!/bin/sh
for a; do
  shift
  case "\$a" in -I/usr/include/*) a="-I$SYSROOT\${a#-I}";; -march=native) a=-mcpu=neoverse-n1;; esac
  set -- "\$@" "\$a"
done
exec aarch64-linux-gnu-$tool "\$@" -idirafter "$SYSROOT/usr/include"
EOF
  done
  chmod +x "$VENV/bin/python" "$VENV/bin/aarch64-gcc" "$VENV/bin/aarch64-g++"
}

if [ ! -f "$ENV_DIR/.stamp" ]; then
  echo "aarch64 run: setting up $ENV_DIR (Debian arm64 CPython, PyPI's aarch64 torch $TORCH_A64: ~3 GB the first time)"
  mkdir -p "$ENV_DIR"
  make_sysroot
  make_venv
  touch "$ENV_DIR/.stamp"
fi
VPY="$VENV/bin/python"

SRC=build/aarch64
rm -rf "$SRC"
mkdir -p "$SRC"
git ls-files -co --exclude-standard -z | xargs -0 cp -P --parents -t "$SRC"
if [ -z "${ASCEND_SDK_DIR:-}" ]; then  # the copy is not beside ../shared: point the NPU checks at the SDK tree
  for sdk in ../shared/ascend-sdk .cann-sources/ascend-sdk; do
    if [ -d "$sdk/asc-devkit" ]; then export ASCEND_SDK_DIR="$(cd "$sdk" && pwd)"; break; fi
  done
fi
cd "$SRC"
export CC="$VENV/bin/aarch64-gcc" CXX="$VENV/bin/aarch64-g++" RBG_EMULATED_AARCH64=1
export RBG_CROSS_EMULATOR="qemu-aarch64-static -cpu neoverse-n1 -L $SYSROOT"  # the tests' aarch64 executables
echo "aarch64 run: $("$VPY" -c 'import platform, torch; print(platform.machine(), "Python", platform.python_version(), "torch", torch.__version__)') under $(qemu-aarch64-static --version | head -1)"
MAX_JOBS=2 "$VPY" -m pip install -q --no-build-isolation --no-deps -e .  # installed: some tests read its metadata
"$VPY" -m pytest -q -p no:cacheprovider "${@:-tests}"  # arguments: pytest's, in place of the whole suite
