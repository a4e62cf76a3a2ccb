"""Checks the kernel half of the op package's configuration (csrc/npu/op_package/kernel_build_config.py, run by
tools/check_opbuild.sh on opbuild's ops-info) against ops-cv's layout for this op and against our kernel:

* the binary list (<op_file>_binary.json): the keys at every level, and the dtype x format set, of ops-cv's list for
  ResizeBicubicV2Grad on ascend950 (image/resize_bicubic_v2_grad/op_host/config/ascend950/, ops-cv at the commit of
  tools/cann_sources/repos.txt): float32, float16, bfloat16 in NCHW, NHWC and ND; every tensor of that binary in the
  same dtype and format, any shape ([-2]), format fixed; attrs align_corners (bool) and scales (list_float);
  distinct names <OpType>_<32 hex digits>, each the md5 of its one-entry list (CANN's custom-op build's rule);
* the simplified-key file: mode 0 for the op, as ops-cv's;
* the Ascend C build entry: ops-cv's for this op (ascend950 only, no automatic synchronisation, its compile option);
* the build's option files: the tiling keys are exactly those the kernel entry branches on (TILING_KEY_IS in
  csrc/op_kernel/resize_bicubic_v2_grad.cpp) and those the shared TilingData header gives phases; the binary list
  is the build's input; the compile options carry the entry's options, the op-package define and our include root.

With CANN_ASC_DEVKIT=<a checkout of asc-devkit> it also runs CANN's own custom-op build scripts
(cmake/asc/fwk_modules/util) on these files, as a toolkit's build would, and checks what they make of them: one
asc_opc command per binary with every tiling key, and the op's compile options in the generated kernel adapter.

Usage: python3 tests/opbuild/check_kernel_config.py <out dir> <autogen dir> <ops-info ini> <csrc dir>.
"""
import glob
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile

OP, OP_FILE, SOC = "ResizeBicubicV2Grad", "resize_bicubic_v2_grad", "ascend950"
OPS_CV_COMBOS = {(d, f) for d in ("float32", "float16", "bfloat16") for f in ("NCHW", "NHWC", "ND")}
OPS_CV_ENTRY_KEYS = {"bin_filename", "inputs", "outputs", "attrs"}
OPS_CV_TENSOR_KEYS = {"name", "index", "dtype", "format", "paramType", "shape", "format_match_mode"}
OPS_CV_ATTRS = [{"name": "align_corners", "dtype": "bool", "value": None},
                {"name": "scales", "dtype": "list_float", "value": None}]
OPS_CV_ASCENDC_ENTRY = {"name": OP, "compute_units": [SOC], "auto_sync": False, "impl_mode": "",
                        "compile_options": {SOC: ["-mllvm -cce-aicore-dcci-before-kernel-end=false"]}}

problems = []


def expect(cond, what):
    if not cond:
        problems.append(what)
    return cond


def check_binary_list(path):
    data = json.load(open(path))
    expect(set(data) == {"op_type", "op_list"} and data["op_type"] == OP, f"{path}: top level {sorted(data)}")
    combos, names = set(), set()
    for e in data["op_list"]:
        name = e.get("bin_filename", "")
        expect(set(e) == OPS_CV_ENTRY_KEYS, f"{name}: keys {sorted(e)}")
        expect(re.fullmatch(OP + r"_[0-9a-f]{32}", name), f"{name}: not {OP}_<md5>")
        expect(name not in names, f"{name}: twice")
        names.add(name)
        unnamed = dict(e, bin_filename="")
        digest = hashlib.md5(json.dumps({"op_type": OP, "op_list": [unnamed]}, indent="  ").encode()).hexdigest()
        expect(name == f"{OP}_{digest}", f"{name}: not the md5 of its entry ({digest})")
        tensors = e["inputs"] + e["outputs"]
        expect([t["name"] for t in tensors] == ["grads", "original_image", "y"] and
               [t["index"] for t in tensors] == [0, 1, 0], f"{name}: tensors {[t['name'] for t in tensors]}")
        for t in tensors:
            expect(set(t) == OPS_CV_TENSOR_KEYS, f"{name}/{t['name']}: keys {sorted(t)}")
            expect(t["shape"] == [-2] and t["paramType"] == "required" and t["format_match_mode"] == "FormatFixed",
                   f"{name}/{t['name']}: shape {t['shape']}, {t['paramType']}, {t['format_match_mode']}")
        kinds = {(t["dtype"], t["format"]) for t in tensors}
        expect(len(kinds) == 1, f"{name}: tensors differ in dtype or format: {sorted(kinds)}")
        combos |= kinds
        expect(e["attrs"] == OPS_CV_ATTRS, f"{name}: attrs {e['attrs']}")
    expect(len(data["op_list"]) == len(OPS_CV_COMBOS) and combos == OPS_CV_COMBOS,
           f"{path}: binaries for {sorted(combos)}, ops-cv's list has {sorted(OPS_CV_COMBOS)}")
    return names


def kernel_keys(csrc):
    entry = open(os.path.join(csrc, "op_kernel", "resize_bicubic_v2_grad.cpp")).read()
    branched = {int(k) for k in re.findall(r"TILING_KEY_IS\((\d+)\)", entry)}
    header = open(os.path.join(csrc, "common", "resize_bicubic_v2_grad_tiling_data.h")).read()
    declared = {int(k) for k in re.findall(r"kKey\w+\s*=\s*(\d+)", header)}
    expect(branched and branched == declared, f"kernel branches on {sorted(branched)}, header declares "
           f"{sorted(declared)}")
    return branched


def check_option_files(autogen, binary_json, csrc):
    lines = open(os.path.join(autogen, "custom_opc_options.ini")).read().split()
    keys = [ln.split("--tiling_key=")[1] for ln in lines if "--tiling_key=" in ln]
    expect(len(keys) == 1 and {int(k) for k in keys[0].split(";")} == kernel_keys(csrc),
           f"custom_opc_options.ini: tiling keys {keys}")
    params = [ln.split("--input-param-file=")[1] for ln in lines if "--input-param-file=" in ln]
    expect(params == [os.path.abspath(binary_json)], f"custom_opc_options.ini: input param file {params}")
    expect(all(ln.startswith(f"{OP}@{SOC}@") for ln in lines), f"custom_opc_options.ini: {lines}")
    op, soc, opts = open(os.path.join(autogen, "custom_compile_options.ini")).read().strip().split(",", 2)
    options = opts.split(";")
    expect((op, soc) == (OP, SOC), f"custom_compile_options.ini: for {op}, {soc}")
    include = [o[2:] for o in options if o.startswith("-I")]
    expect(options[:1] == OPS_CV_ASCENDC_ENTRY["compile_options"][SOC] and "-DRBG_CANN_OP_PACKAGE" in options and
           len(include) == 1 and os.path.isfile(os.path.join(include[0], "op_kernel", f"{OP_FILE}.cpp")),
           f"custom_compile_options.ini: options {options}")
    return options


def check_with_cann_scripts(devkit, autogen, ops_info, binary_names, options, csrc):
    """CANN's own custom-op build scripts, run on our files as a toolkit's build runs them."""
    util = os.path.join(devkit, "cmake", "asc", "fwk_modules", "util")
    with tempfile.TemporaryDirectory() as tmp:
        ini = os.path.join(autogen, os.path.basename(ops_info))
        if os.path.abspath(ini) != os.path.abspath(ops_info):
            open(ini, "w").write(open(ops_info).read())
        script = f"""
import sys, ascendc_bin_param_build as b, ascendc_impl_build as a, const_var as c
b.gen_bin_param_file({ini!r}, {tmp!r}, {SOC!r}, {os.path.join(autogen, 'custom_opc_options.ini')!r}, [{OP!r}])
a.write_scripts({ini!r}, {{c.REPLAY_BATCH: '', c.REPLAY_ITERATE: ''}}, {{c.CFG_IMPL_DIR: {os.path.join(csrc, "op_kernel")!r},
    c.CFG_OUT_DIR: {tmp!r}, c.AUTO_GEN_DIR: {autogen!r}}}, [{OP!r}], '', '/nonexistent')
"""
        run = subprocess.run([sys.executable, "-c", script], cwd=util, capture_output=True, text=True)
        if not expect(run.returncode == 0, f"CANN's scripts failed: {run.stderr[-2000:]}"):
            return
        commands = [open(f).read() for f in sorted(glob.glob(os.path.join(tmp, "*.sh")))]
        params = {os.path.basename(f)[:-5] for f in glob.glob(os.path.join(tmp, f"{OP}_*.json"))}
        expect(params == binary_names, f"CANN's build splits the list into {sorted(params)}")
        keys = ",".join(str(k) for k in sorted(kernel_keys(csrc)))
        expect(len(commands) == len(binary_names) and all(
            f"--main_func={OP_FILE}" in c and f'--tiling_key="{keys}"' in c and "--simplified_key_mode=0" in c
            for c in commands), f"CANN's build commands: {commands[:1]}")
        adapter = open(os.path.join(tmp, "dynamic", f"{OP_FILE}.py")).read()
        expect(f"custom_compile_options = {{{SOC!r}: {options!r}}}" in adapter,
               "CANN's kernel adapter does not carry our compile options")
        print(f"  ok: CANN's custom-op build scripts ({util}): {len(commands)} asc_opc commands, every tiling key, "
              "our compile options in the kernel adapter")


def main(out, autogen, ops_info, csrc):
    out, autogen, ops_info, csrc = (os.path.abspath(p) for p in (out, autogen, ops_info, csrc))
    config = os.path.join(out, "config", SOC)
    binary_json = os.path.join(config, f"{OP_FILE}_binary.json")
    names = check_binary_list(binary_json)
    ini = open(os.path.join(config, f"{OP_FILE}_simplified_key.ini")).read().split()
    expect(ini == [f"[{OP}]", "default=0"], f"simplified key file: {ini}")
    entries = json.load(open(os.path.join(out, "ascendc_config.json")))
    expect(entries == [OPS_CV_ASCENDC_ENTRY], f"ascendc_config.json: {entries}")
    options = check_option_files(autogen, binary_json, csrc)
    devkit = os.environ.get("CANN_ASC_DEVKIT")
    if devkit and not problems:
        check_with_cann_scripts(devkit, autogen, ops_info, names, options, csrc)
    elif not devkit:
        print("  skipped: CANN's own build scripts on these files (set CANN_ASC_DEVKIT to an asc-devkit checkout, or run "
              "tools/fetch_cann_sources.sh)")
    for p in problems:
        print(f"  FAILED: {p}")
    if problems:
        return 1
    print(f"  ok: kernel build config: {len(names)} binaries (ops-cv's dtype x format set), simplified key mode 0, "
          "ops-cv's Ascend C entry, the kernel's tiling keys, compile options")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:5]))
