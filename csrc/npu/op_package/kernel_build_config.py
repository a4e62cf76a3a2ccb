#!/usr/bin/env python3
"""The kernel half of the op package's configuration, generated from what opbuild made of our OpDef.

CANN's runtime picks a kernel binary of a custom op package by its config JSON (kernel/config/<soc>/), which CANN's
own build (the toolkit's ascendc_compile_kernel.py, asc_opc, insert_simplified_keys.py, ascendc_ops_config.py)
writes from the binaries it compiles. What that build reads, this script writes (stdlib only; runs without a
toolkit, so that CI checks it):

* ``<out>/config/<soc>/<op_file>_binary.json``: the binaries to compile, one per dtype x format combination of the
  ops-info (and an ND twin of each NCHW one), in the layout ops-cv keeps for its ops (op_type; op_list of bin_filename, inputs, outputs, attrs; every
  tensor of any shape (``[-2]``) and of exactly its format (``FormatFixed``)). Each ``bin_filename`` is
  ``<OpType>_<md5>`` of that entry's one-entry JSON, as CANN's custom-op build names binaries.
* ``<out>/config/<soc>/<op_file>_simplified_key.ini``: the simplified-key mode (0, as the custom-op build passes
  to asc_opc).
* ``<out>/ascendc_config.json``: the op's Ascend C entry as ops-cv's build table has it (no automatic
  synchronisation: the kernel places its own SyncAll; the compile options below).
* ``<autogen>/custom_compile_options.ini`` (``OpType,soc,opt;opt``): the compile options of every binary;
  ``<autogen>/custom_opc_options.ini`` (``OpType@soc@--option=value``): the tiling keys to compile (each one
  specialised binary per key) and the binary list above as the build's input.

Usage: kernel_build_config.py --ops-info <aic-<soc>-ops-info.ini> --tiling-header <tiling_data.h>
       --kernel-include <csrc> --out <dir> --autogen <dir>
"""
import argparse
import configparser
import hashlib
import json
import os
import re
import sys

# ops-cv builds ResizeBicubicV2Grad for ascend950 with these options and no automatic synchronisation: the data
# cache is not written back before the kernel ends (the kernel's stores go to global memory directly).
ASCENDC_COMPILE_OPTIONS = ["-mllvm -cce-aicore-dcci-before-kernel-end=false"]
# Ours on top: the op-package entry of the kernel source, and where its includes live.
PACKAGE_DEFINES = ["-DRBG_CANN_OP_PACKAGE"]
SIMPLIFIED_KEY_MODE = 0
# A graph may rewrite a tensor's format to ND; the tiling reads ND as NCHW (op_host/resize_bicubic_v2_grad_tiling.cpp),
# and the runtime selects a binary by the format it is called with, so each NCHW binary has an ND twin (as in
# ops-cv's list for this op).
ND_TWIN_OF = "NCHW"
ATTR_TYPES = {"bool": "bool", "int": "int", "float": "float", "str": "str", "listBool": "list_bool",
              "listInt": "list_int", "listFloat": "list_float", "listListInt": "list_list_int"}


def read_ops_info(path):
    """(op_type, {section: {key: value}}) of the one op in an ops-info ini."""
    parser = configparser.ConfigParser(interpolation=None)
    parser.optionxform = str
    parser.read(path)
    if len(parser.sections()) != 1:
        raise SystemExit(f"{path}: expected one op, found {parser.sections()}")
    op_type = parser.sections()[0]
    info = {}
    for key, value in parser[op_type].items():
        section, _, field = key.partition(".")
        info.setdefault(section, {})[field] = value
    return op_type, info


def tensors(info, kind):
    """The op's inputs or outputs in index order: [(name, paramType, dtypes, formats)]."""
    found = []
    index = 0
    while f"{kind}{index}" in info:
        t = info[f"{kind}{index}"]
        found.append((t["name"], t["paramType"], t["dtype"].split(","), t["format"].split(",")))
        index += 1
    return found


def combinations(info):
    """(dtype, format) per binary: the ops-info's columns in order, then the ND twins of the NCHW ones."""
    inputs = tensors(info, "input")
    columns = list(zip(inputs[0][2], inputs[0][3]))
    return columns + [(dtype, "ND") for dtype, fmt in columns if fmt == ND_TWIN_OF]


def binary_entries(op_type, info):
    """One binary per combination; every tensor of the op takes the combination's dtype and format."""
    inputs, outputs = tensors(info, "input"), tensors(info, "output")
    for name, _, dtypes, formats in inputs + outputs:
        if list(zip(dtypes, formats)) != list(zip(inputs[0][2], inputs[0][3])):
            raise SystemExit(f"{op_type}: {name} does not take the same dtype x format columns as the first input")
    attr_names = [a for a in info.get("attr", {}).get("list", "").split(",") if a]
    entries, names = [], set()
    for dtype, fmt in combinations(info):
        def params(ts):
            return [{"name": name, "index": i, "dtype": dtype, "format": fmt, "paramType": ptype, "shape": [-2],
                     "format_match_mode": "FormatFixed"} for i, (name, ptype, _, _) in enumerate(ts)]
        entry = {"bin_filename": "", "inputs": params(inputs), "outputs": params(outputs),
                 "attrs": [{"name": a, "dtype": ATTR_TYPES[info[f"attr_{a}"]["type"]], "value": None}
                           for a in attr_names]}
        text = json.dumps({"op_type": op_type, "op_list": [entry]}, indent="  ")
        digest = hashlib.md5(text.encode("utf-8")).hexdigest()
        while digest in names:  # CANN's rule for a clash: extend the text until the digest is new
            text += "1"
            digest = hashlib.md5(text.encode("utf-8")).hexdigest()
        names.add(digest)
        entry["bin_filename"] = f"{op_type}_{digest}"
        entries.append(entry)
    return entries


def tiling_keys(header):
    """The kernel's tiling keys: the enumerators of TilingKey in the shared TilingData header."""
    text = open(header, encoding="utf-8").read()
    body = re.search(r"enum\s+TilingKey\b[^{]*\{(.*?)\}", text, re.S)
    if not body:
        raise SystemExit(f"{header}: no enum TilingKey")
    return sorted(int(v) for v in re.findall(r"kKey\w+\s*=\s*(\d+)", body.group(1)))


def write(path, text):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def generate(ops_info, tiling_header, kernel_include, out, autogen, soc="ascend950"):
    op_type, info = read_ops_info(ops_info)
    op_file = info.get("opFile", {}).get("value") or re.sub(r"(?<!^)(?=[A-Z])", "_", op_type).lower()
    binary_json = os.path.abspath(os.path.join(out, "config", soc, f"{op_file}_binary.json"))
    write(binary_json, json.dumps({"op_type": op_type, "op_list": binary_entries(op_type, info)}, indent=2) + "\n")
    write(os.path.join(out, "config", soc, f"{op_file}_simplified_key.ini"),
          f"[{op_type}]\ndefault={SIMPLIFIED_KEY_MODE}\n")
    write(os.path.join(out, "ascendc_config.json"), json.dumps(
        [{"name": op_type, "compute_units": [soc], "auto_sync": False, "impl_mode": "",
          "compile_options": {soc: ASCENDC_COMPILE_OPTIONS}}], indent=2) + "\n")
    options = ASCENDC_COMPILE_OPTIONS + PACKAGE_DEFINES + [f"-I{os.path.abspath(kernel_include)}"]
    write(os.path.join(autogen, "custom_compile_options.ini"), f"{op_type},{soc},{';'.join(options)}\n")
    keys = ";".join(str(k) for k in tiling_keys(tiling_header))
    write(os.path.join(autogen, "custom_opc_options.ini"),
          f"{op_type}@{soc}@--tiling_key={keys}\n{op_type}@{soc}@--input-param-file={binary_json}\n")
    return binary_json


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--ops-info", required=True)
    p.add_argument("--tiling-header", required=True)
    p.add_argument("--kernel-include", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--autogen", required=True)
    p.add_argument("--soc", default="ascend950")
    a = p.parse_args(argv)
    print(generate(a.ops_info, a.tiling_header, a.kernel_include, a.out, a.autogen, a.soc))


if __name__ == "__main__":
    sys.exit(main())
