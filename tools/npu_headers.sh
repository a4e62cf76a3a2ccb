# Sourced by check_npu_glue.sh and check_opbuild.sh: npu_headers prints the folder with the headers of the
# torch-npu 2.13.0 wheel (torch_npu/include, with acl/), downloaded once into .npu_headers/ and never installed
# (without CANN, an installed torch_npu breaks `import torch`). Only the headers are unpacked.
npu_headers() {
  local dest=.npu_headers py=${PY:-.venv/bin/python}
  if [ ! -d "$dest/torch_npu/include" ]; then
    mkdir -p "$dest/wheel"
    "$py" -m pip download -q --no-deps --only-binary=:all: "torch-npu==2.13.0" -d "$dest/wheel" >&2
    "$py" -c "import glob, zipfile; z = zipfile.ZipFile(glob.glob('$dest/wheel/torch_npu-*.whl')[0]); [z.extract(n, '$dest') for n in z.namelist() if n.startswith('torch_npu/include/')]"
    rm -rf "$dest/wheel"
  fi
  echo "$dest/torch_npu/include"
}
