"""Checks what CANN's opbuild generated from our OpDef (tools/check_opbuild.sh runs it) against the op's contract,
which is written here from the design (docs/design.md §3, docs/npu.md), not from opbuild's output:

* ops-info (aic-ascend950-ops-info.ini and its JSON): inputs grads and original_image, output y, all required;
  every tensor takes float32/float16/bfloat16 in NCHW and NHWC (six combinations, the same for all three, the same
  for unknown shapes); attrs align_corners (bool, optional, false) and scales (list of floats, optional, [0, 0]);
  dynamic shape, dynamic rank and dynamic compile-static all on; an AI Core op.
* the aclnn API (aclnn_resize_bicubic_v2_grad.h): aclnnResizeBicubicV2GradGetWorkspaceSize(grads, originalImage,
  alignCorners, scalesOptional, out, workspaceSize, executor) and aclnnResizeBicubicV2Grad(workspace,
  workspaceSize, executor, stream).
* the op proto (op_proto.h): REG_OP(ResizeBicubicV2Grad) with the same inputs, output and attrs with defaults.

Usage: python3 tests/opbuild/check_generated.py <opbuild output dir>. Exit 1 with every mismatch listed.
"""
import configparser
import itertools
import json
import os
import re
import sys

OP = "ResizeBicubicV2Grad"
TENSORS = [("input0", "grads"), ("input1", "original_image"), ("output0", "y")]
DTYPES = ["float32", "float16", "bfloat16"]
FORMATS = ["NCHW", "NHWC"]
ATTRS = {"align_corners": {"type": "bool", "paramType": "optional", "defaultValue": "false", "value": "all"},
         "scales": {"type": "listFloat", "paramType": "optional", "value": "all"}}
SCALES_DEFAULT = [0.0, 0.0]
FLAGS = ["dynamicCompileStatic", "dynamicRankSupport", "dynamicShapeSupport"]

problems = []


def expect(cond, what):
    if not cond:
        problems.append(what)


def check_ops_info(info, where):
    """`info`: {section: {key: value}} for the op, from the ini or the JSON."""
    expect(set(k for k in info if k.startswith(("input", "output"))) == {t for t, _ in TENSORS},
           f"{where}: tensors {sorted(k for k in info if k.startswith(('input', 'output')))}, expected input0, "
           "input1, output0")
    combos = set(itertools.product(DTYPES, FORMATS))
    for key, name in TENSORS:
        t = info.get(key, {})
        expect(t.get("name") == name, f"{where}: {key}.name = {t.get('name')!r}, expected {name!r}")
        expect(t.get("paramType") == "required", f"{where}: {name} paramType {t.get('paramType')!r}")
        dtypes = t.get("dtype", "").split(",")
        formats = t.get("format", "").split(",")
        expect(len(dtypes) == len(formats) == len(combos) and set(zip(dtypes, formats)) == combos,
               f"{where}: {name} dtype x format {list(zip(dtypes, formats))}, expected {sorted(combos)}")
        expect(t.get("unknownshape_format") == t.get("format"),
               f"{where}: {name} unknown-shape formats {t.get('unknownshape_format')!r} differ from its formats")
        if key != "input0":
            first = info.get("input0", {})
            expect((t.get("dtype"), t.get("format")) == (first.get("dtype"), first.get("format")),
                   f"{where}: {name} combinations are not in the same order as grads'")
    expect(info.get("attr", {}).get("list") == "align_corners,scales",
           f"{where}: attr.list = {info.get('attr', {}).get('list')!r}")
    for name, fields in ATTRS.items():
        a = info.get(f"attr_{name}", {})
        for field, value in fields.items():
            expect(a.get(field) == value, f"{where}: attr {name}.{field} = {a.get(field)!r}, expected {value!r}")
    scales_default = info.get("attr_scales", {}).get("defaultValue", "")
    try:
        parsed = [float(v) for v in json.loads(scales_default)]
    except (ValueError, TypeError):
        parsed = None
    expect(parsed == SCALES_DEFAULT, f"{where}: scales default {scales_default!r}, expected {SCALES_DEFAULT}")
    for flag in FLAGS:
        expect(info.get(flag, {}).get("flag") == "true", f"{where}: {flag}.flag = {info.get(flag, {}).get('flag')!r}")
    expect(info.get("coreType", {}).get("value") == "AiCore", f"{where}: coreType {info.get('coreType')}")


def ini_sections(path):
    parser = configparser.ConfigParser(interpolation=None)
    parser.optionxform = str  # keys are case-sensitive (paramType, defaultValue)
    parser.read(path)
    expect(parser.sections() == [OP], f"{path}: sections {parser.sections()}, expected [{OP!r}]")
    info = {}
    for key, value in parser[OP].items() if parser.has_section(OP) else []:
        section, _, field = key.partition(".")
        info.setdefault(section, {})[field] = value
    return info


def compact(text):
    return re.sub(r"\s+", " ", text)


def check_aclnn_header(path):
    text = compact(open(path).read())
    expect("#include \"aclnn/acl_meta.h\"" in text, f"{path}: does not include aclnn/acl_meta.h")
    phase1 = ("aclnnStatus aclnnResizeBicubicV2GradGetWorkspaceSize( const aclTensor *grads, const aclTensor "
              "*originalImage, bool alignCorners, const aclFloatArray *scalesOptional, const aclTensor *out, "
              "uint64_t *workspaceSize, aclOpExecutor **executor);")
    phase2 = ("aclnnStatus aclnnResizeBicubicV2Grad( void *workspace, uint64_t workspaceSize, aclOpExecutor "
              "*executor, aclrtStream stream);")
    expect(phase1 in text, f"{path}: no {phase1}")
    expect(phase2 in text, f"{path}: no {phase2}")
    expect(text.count("aclnnStatus aclnn") == 2, f"{path}: {text.count('aclnnStatus aclnn')} aclnn functions, "
                                                  "expected 2")
    expect('extern "C"' in text, f"{path}: the API is not extern \"C\"")


def check_proto(path):
    text = compact(open(path).read())
    for part in [f"REG_OP({OP})", ".INPUT(grads,", ".INPUT(original_image,", ".OUTPUT(y,",
                 ".ATTR(align_corners, Bool, false)", ".ATTR(scales, ListFloat, {0,0})",
                 f".OP_END_FACTORY_REG({OP})"]:
        expect(part in text, f"{path}: no {part}")
    expect(text.index(".INPUT(grads,") < text.index(".INPUT(original_image,") < text.index(".OUTPUT(y,"),
           f"{path}: inputs and output out of order")


def main(gen):
    files = {
        "aclnn header": os.path.join(gen, "aclnn_resize_bicubic_v2_grad.h"),
        "aclnn source": os.path.join(gen, "aclnn_resize_bicubic_v2_grad.cpp"),
        "ops-info": os.path.join(gen, "aic-ascend950-ops-info.ini"),
        "ops-info JSON": os.path.join(gen, "aic-ascend950-ops-info.json"),
        "op proto": os.path.join(gen, "op_proto.h"),
    }
    for what, path in files.items():
        expect(os.path.isfile(path), f"missing {what}: {path}")
    if problems:
        return report(files)
    check_ops_info(ini_sections(files["ops-info"]), files["ops-info"])
    with open(files["ops-info JSON"]) as f:
        js = json.load(f)
    expect(list(js) == [OP], f"{files['ops-info JSON']}: ops {list(js)}")
    check_ops_info(js.get(OP, {}), files["ops-info JSON"])
    check_aclnn_header(files["aclnn header"])
    check_proto(files["op proto"])
    return report(files)


def report(files):
    if problems:
        print("opbuild: generated files do not meet the op's contract:")
        for p in problems:
            print("  -", p)
        return 1
    for what, path in files.items():
        print(f"  ok: {what}: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
