# Two commands do everything on a fresh machine: `make demo` (the main job) and `make test`.
PY      ?= python3
VENV    ?= .venv
VPY     := $(VENV)/bin/python
# The torch the venv gets. Where a local package index holds a CPU build, torch==2.13.0 resolves to it; from
# PyPI it is the CUDA build. TORCH_SPEC='torch==2.13.0 --index-url <PyTorch's CPU index>' picks a CPU one.
TORCH_SPEC ?= torch==2.13.0
STAMP   := $(VENV)/.deps-stamp
SOURCES := $(shell find csrc torch_resize_bicubic -name '*.cpp' -o -name '*.h' -o -name '*.py') setup.py pyproject.toml

.PHONY: demo test test-newest test-aarch64 bench sanitize ascend-check install clean

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip setuptools wheel ninja
	$(VPY) -m pip install -q $(TORCH_SPEC)
	$(VPY) -m pip install -q "pytest>=8" "hypothesis>=6.100" numpy expecttest matplotlib tqdm
	touch $@

$(VENV)/.build-stamp: $(STAMP) $(SOURCES)
	$(VPY) -m pip install -q --no-build-isolation --no-deps -e ".[test,demo]"
	touch $@

install: $(VENV)/.build-stamp

demo: install
	$(VPY) examples/train_demo.py

test: install
	$(VPY) -m pytest -q tests
	PY=$(VPY) bash tools/check_npu_glue.sh
	bash tools/ascend_check.sh

# The whole suite again on the newest torch pip installs (2.14.1) and Python 3.13, in a venv cached outside the clone.
test-newest:
	bash tools/test_newest.sh

# The suite on aarch64 under qemu-user: Debian's arm64 CPython and PyPI's aarch64 torch, cached outside the clone.
test-aarch64:
	bash tools/test_aarch64.sh

ascend-check:
	bash tools/ascend_check.sh

# bench_images.py compares with OpenCV, an optional benchmark dependency installed here (never a runtime one).
bench: install
	$(VPY) benchmarks/bench_cpu.py
	$(VPY) benchmarks/bench_resize.py
	$(VPY) benchmarks/bench_ceiling.py
	$(VPY) -m pip install -q opencv-python-headless
	$(VPY) benchmarks/bench_images.py
	$(VPY) benchmarks/bench_strides.py

sanitize: $(STAMP)
	PY=$(VPY) bash tools/sanitize.sh

clean:
	rm -rf build $(VENV) torch_resize_bicubic/*.so torch_resize_bicubic/_build_info.py
