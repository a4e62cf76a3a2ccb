# Sourced by check_npu_glue.sh and check_opbuild.sh: npu_headers prints the folder with the headers of the
# torch-npu 2.13.0 wheel (torch_npu/include, with acl/), downloaded once into .npu_headers/ and never installed
# (without CANN, an installed torch_npu breaks `import torch`). Only the headers are unpacked.
npu_headers() {
  # Any Python with pip will do (the project's venv where there is one): the wheel is fetched for CPython 3.11
  # whatever the interpreter, and only its headers are read.
  local dest=.npu_headers py=${PY:-}
  if [ -z "$py" ]; then
    if [ -x .venv/bin/python ]; then py=.venv/bin/python; else py=python3; fi
  fi
  if [ ! -d "$dest/torch_npu/include" ]; then
    mkdir -p "$dest/wheel"
    "$py" -m pip download -q --no-deps --only-binary=:all: --python-version 3.11 --implementation cp \
      --platform manylinux_2_28_x86_64 "torch-npu==2.13.0" -d "$dest/wheel" >&2
    "$py" -c "import glob, zipfile; z = zipfile.ZipFile(glob.glob('$dest/wheel/torch_npu-*.whl')[0]); [z.extract(n, '$dest') for n in z.namelist() if n.startswith('torch_npu/include/')]"
    rm -rf "$dest/wheel"
  fi
  echo "$dest/torch_npu/include"
}
