#!/usr/bin/env bash
# `make sanitize`: builds the extension with AddressSanitizer + UndefinedBehaviorSanitizer (RBG_SANITIZE=1,
# into build/sanitize, leaving the normal build alone) and runs the kernel tests against that build.
# Python itself is not instrumented, so the sanitizer runtimes are preloaded; leak checking is off because
# the interpreter keeps its own allocations alive at exit. Any ASan report or UB aborts the run.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
RBG_SANITIZE=1 RBG_NO_NPU=1 "$PY" setup.py -q build --build-base build/sanitize >/dev/null
lib=$(ls -d build/sanitize/lib*)
export LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)"
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
root=$PWD
PY="$(cd "$(dirname "$PY")" && pwd)/$(basename "$PY")"  # absolute, but still the venv's python
cd "$lib"  # python -c / -m put the working directory first on sys.path: the instrumented package wins
"$PY" -c "import torch_resize_bicubic._C as c; assert '/build/sanitize/' in c.__file__, c.__file__; print('sanitized build:', c.__file__)"
# The kernel tests: both directions, every path (fast, streaming, overflow guard, interleaved rows split into
# planes, cached plans), the antialiased pair, each CPU kernel family on its own, the bad-input contract, the tiling,
# the emulator, its race check and its launch rules; the override switched under load and small calls in a forked
# child; the output cache (off by default in this build, which cannot see its mappings; its tests turn it on).
# (torch.compile tests are left out: the switch's stress test traces with aot_eager, which compiles no code;
# Inductor would build and load uninstrumented code under the preloaded runtimes.)
"$PY" -m pytest -q -p no:cacheprovider "$root"/tests/test_grad_ops.py "$root"/tests/test_determinism.py \
  "$root"/tests/test_errors.py "$root"/tests/test_npu_tiling.py "$root"/tests/test_npu_emulator.py \
  "$root"/tests/test_npu_race_check.py "$root"/tests/test_npu_device_rules.py "$root"/tests/test_forward.py \
  "$root"/tests/test_hardening.py "$root"/tests/test_strides.py "$root"/tests/test_cpu_plan.py \
  "$root"/tests/test_cpu_kernels.py "$root"/tests/test_concurrency.py "$root"/tests/test_antialias.py \
  "$root"/tests/test_output_cache.py \
  -k "not compile" "$@"
echo "sanitize: AddressSanitizer + UndefinedBehaviorSanitizer ran clean"
