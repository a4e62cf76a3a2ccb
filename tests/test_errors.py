"""Every bad-input case of docs/design.md §3: a Python exception whose message names the offending argument."""
import math

import pytest
import torch

import torch_resize_bicubic as trb

R, V, T = RuntimeError, ValueError, TypeError  # ValueError/TypeError are what we raise; all are allowed
img = torch.empty(2, 3, 4, 5)
g = torch.randn(2, 3, 7, 9)

grad_cases = [
    ("grads not 4-D", lambda: trb.resize_bicubic_v2_grad(torch.randn(3, 7, 9), img), V, "grads"),
    ("grads 5-D", lambda: trb.resize_bicubic_v2_grad(torch.randn(1, 2, 3, 7, 9), img), V, "grads"),
    ("image not 4-D", lambda: trb.resize_bicubic_v2_grad(g, torch.empty(3, 4, 5)), V, "original_image"),
    ("grads H = 0", lambda: trb.resize_bicubic_v2_grad(torch.randn(2, 3, 0, 9), img), V, "grads"),
    ("grads W = 0", lambda: trb.resize_bicubic_v2_grad(torch.randn(2, 3, 7, 0), img), V, "grads"),
    ("image H = 0", lambda: trb.resize_bicubic_v2_grad(g, torch.empty(2, 3, 0, 5)), V, "original_image"),
    ("image W = 0", lambda: trb.resize_bicubic_v2_grad(g, torch.empty(2, 3, 4, 0)), V, "original_image"),
    ("N differs", lambda: trb.resize_bicubic_v2_grad(g, torch.empty(1, 3, 4, 5)), V, "original_image"),
    ("C differs", lambda: trb.resize_bicubic_v2_grad(g, torch.empty(2, 4, 4, 5)), V, "original_image"),
    ("scales length 1", lambda: trb.resize_bicubic_v2_grad(g, img, False, (1.0,)), V, "scales"),
    ("scales length 3", lambda: trb.resize_bicubic_v2_grad(g, img, False, (1.0, 1.0, 1.0)), V, "scales"),
    ("scales NaN", lambda: trb.resize_bicubic_v2_grad(g, img, False, (math.nan, 1.0)), V, "scales"),
    ("scales inf", lambda: trb.resize_bicubic_v2_grad(g, img, False, (1.0, math.inf)), V, "scales"),
    ("scales -inf", lambda: trb.resize_bicubic_v2_grad(g, img, True, (-math.inf, 1.0)), V, "scales"),
    ("int grads", lambda: trb.resize_bicubic_v2_grad(g.int(), img.int()), T, "grads"),
    ("bool grads", lambda: trb.resize_bicubic_v2_grad(g > 0, img > 0), T, "grads"),
    ("complex grads", lambda: trb.resize_bicubic_v2_grad(g.to(torch.complex64), img.to(torch.complex64)), T, "grads"),
    ("int image", lambda: trb.resize_bicubic_v2_grad(g, img.int()), T, "original_image"),
    ("dtype mismatch", lambda: trb.resize_bicubic_v2_grad(g, img.double()), T, "original_image"),
    ("device mismatch", lambda: trb.resize_bicubic_v2_grad(g, img.to("meta")), R, "original_image"),
]

aclnn_cases = [
    ("grad_output not 4-D", lambda: trb.upsample_bicubic2d_backward(torch.randn(3, 7, 9), [7, 9], [2, 3, 4, 5], False), V, "grad_output"),
    ("output_size length 1", lambda: trb.upsample_bicubic2d_backward(g, [7], [2, 3, 4, 5], False), V, "output_size"),
    ("output_size length 3", lambda: trb.upsample_bicubic2d_backward(g, [7, 9, 1], [2, 3, 4, 5], False), V, "output_size"),
    ("input_size length 3", lambda: trb.upsample_bicubic2d_backward(g, [7, 9], [2, 3, 4], False), V, "input_size"),
    ("input_size length 5", lambda: trb.upsample_bicubic2d_backward(g, [7, 9], [2, 3, 4, 5, 6], False), V, "input_size"),
    ("output_size zero", lambda: trb.upsample_bicubic2d_backward(torch.randn(2, 3, 0, 9), [0, 9], [2, 3, 4, 5], False), V, "output_size"),
    ("output_size negative", lambda: trb.upsample_bicubic2d_backward(g, [-7, 9], [2, 3, 4, 5], False), V, "output_size"),
    ("input_size H zero", lambda: trb.upsample_bicubic2d_backward(g, [7, 9], [2, 3, 0, 5], False), V, "input_size"),
    ("input_size W negative", lambda: trb.upsample_bicubic2d_backward(g, [7, 9], [2, 3, 4, -5], False), V, "input_size"),
    ("input_size N negative", lambda: trb.upsample_bicubic2d_backward(g, [7, 9], [-2, 3, 4, 5], False), V, "input_size"),
    ("grad H != output_size", lambda: trb.upsample_bicubic2d_backward(g, [8, 9], [2, 3, 4, 5], False), V, "output_size"),
    ("grad W != output_size", lambda: trb.upsample_bicubic2d_backward(g, [7, 8], [2, 3, 4, 5], False), V, "output_size"),
    ("N != input_size", lambda: trb.upsample_bicubic2d_backward(g, [7, 9], [1, 3, 4, 5], False), V, "input_size"),
    ("C != input_size", lambda: trb.upsample_bicubic2d_backward(g, [7, 9], [2, 2, 4, 5], False), V, "input_size"),
    ("scales_h NaN", lambda: trb.upsample_bicubic2d_backward(g, [7, 9], [2, 3, 4, 5], False, math.nan, None), V, "scales"),
    ("scales_w inf", lambda: trb.upsample_bicubic2d_backward(g, [7, 9], [2, 3, 4, 5], False, None, math.inf), V, "scales"),
    ("int grad_output", lambda: trb.upsample_bicubic2d_backward(g.long(), [7, 9], [2, 3, 4, 5], False), T, "grad_output"),
    ("complex grad_output", lambda: trb.upsample_bicubic2d_backward(g.to(torch.complex128), [7, 9], [2, 3, 4, 5], False), T, "grad_output"),
]

x = torch.randn(2, 3, 4, 5)
forward_cases = [
    ("size and scale_factor", lambda: trb.resize_bicubic(x, size=8, scale_factor=2.0), V, "size"),
    ("neither", lambda: trb.resize_bicubic(x), V, "size"),
    ("size length 3", lambda: trb.resize_bicubic(x, size=(8, 8, 8)), V, "size"),
    ("size zero", lambda: trb.resize_bicubic(x, size=(0, 8)), V, "size"),
    ("size negative", lambda: trb.resize_bicubic(x, size=-3), V, "size"),
    ("size float", lambda: trb.resize_bicubic(x, size=(8.5, 8)), T, "size"),
    ("scale_factor length 3", lambda: trb.resize_bicubic(x, scale_factor=(2.0, 2.0, 2.0)), V, "scale_factor"),
    ("scale_factor zero", lambda: trb.resize_bicubic(x, scale_factor=0.0), V, "scale_factor"),
    ("scale_factor negative", lambda: trb.resize_bicubic(x, scale_factor=-2.0), V, "scale_factor"),
    ("scale_factor NaN", lambda: trb.resize_bicubic(x, scale_factor=math.nan), V, "scale_factor"),
    ("scale_factor inf", lambda: trb.resize_bicubic(x, scale_factor=math.inf), V, "scale_factor"),
    ("scale_factor to empty", lambda: trb.resize_bicubic(x, scale_factor=0.1), V, "scale_factor"),
    ("scale_factor string", lambda: trb.resize_bicubic(x, scale_factor="2"), T, "scale_factor"),
    ("recompute with size", lambda: trb.resize_bicubic(x, size=8, recompute_scale_factor=True), V, "recompute_scale_factor"),
    ("3-D input", lambda: trb.resize_bicubic(torch.randn(3, 4, 5), size=8), V, "input"),
    ("int input", lambda: trb.resize_bicubic(x.int(), size=8), T, "input"),
    ("op: size length 1", lambda: torch.ops.cann.resize_bicubic_v2(x, [8], False, [0.0, 0.0]), V, "size"),
    ("op: size zero", lambda: torch.ops.cann.resize_bicubic_v2(x, [8, 0], False, [0.0, 0.0]), V, "size"),
    ("op: scales length 1", lambda: torch.ops.cann.resize_bicubic_v2(x, [8, 8], False, [0.0]), V, "scales"),
    ("op: scales NaN", lambda: torch.ops.cann.resize_bicubic_v2(x, [8, 8], False, [math.nan, 0.0]), V, "scales"),
    ("op: images not 4-D", lambda: torch.ops.cann.resize_bicubic_v2(torch.randn(4, 5), [8, 8], False, [0.0, 0.0]), V, "images"),
]


@pytest.mark.parametrize("name,call,exc,arg", grad_cases + aclnn_cases + forward_cases,
                         ids=[c[0] for c in grad_cases + aclnn_cases + forward_cases])
def test_bad_input_raises_and_names_argument(name, call, exc, arg):
    with pytest.raises(exc) as info:
        call()
    assert arg in str(info.value), f"message does not name {arg!r}: {info.value}"


# (A meta tensor is no distinct device under FakeTensorMode, so the device case is left to the eager test.)
fake_cases = [c for c in grad_cases + aclnn_cases if c[0] != "device mismatch"]


@pytest.mark.parametrize("name,call,exc,arg", fake_cases, ids=[c[0] for c in fake_cases])
def test_bad_input_is_rejected_by_fake_kernels_too(name, call, exc, arg):
    # Under FakeTensorMode the shared C++ validation runs in the fake kernels, with the same message.
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode(allow_non_fake_inputs=True):
        with pytest.raises(exc) as info:
            call()
    assert arg in str(info.value)


# ---- every tensor argument of every op and API function: None and the tensor kinds no kernel of ours takes ----

def _kinds():
    dense = torch.randn(1, 1, 4, 4)
    kinds = {
        "None": lambda: None,
        "nested": lambda: torch.nested.nested_tensor([torch.randn(1, 4, 4)]),
        "jagged": lambda: torch.nested.nested_tensor([torch.randn(1, 4, 4), torch.randn(1, 4, 4)],
                                                     layout=torch.jagged),
        "sparse_coo": lambda: dense.to_sparse(),
        "sparse_csr": lambda: torch.randn(4, 4).to_sparse_csr(),
        "quantized": lambda: torch.quantize_per_tensor(dense, 0.1, 0, torch.qint8),
    }
    if torch.backends.mkldnn.is_available():
        kinds["mkldnn"] = lambda: dense.to_mkldnn()
    return kinds


KINDS = _kinds()
cann = torch.ops.cann
g4, img2 = torch.randn(1, 1, 4, 4), torch.randn(1, 1, 2, 2)
# (call with the argument `arg` replaced by `bad`, the argument's name)
TENSOR_ARGS = [
    (lambda bad: cann.resize_bicubic_v2(bad, [8, 8], False, [0.0, 0.0]), "images"),
    (lambda bad: cann.resize_bicubic_v2_grad(bad, img2, False, [0.0, 0.0]), "grads"),
    (lambda bad: cann.resize_bicubic_v2_grad(g4, bad, False, [0.0, 0.0]), "original_image"),
    (lambda bad: cann._resize_bicubic_v2_grad_adjoint(bad, img2, False, [0.0, 0.0]), "grads"),
    (lambda bad: cann._resize_bicubic_v2_grad_adjoint(g4, bad, False, [0.0, 0.0]), "original_image"),
    (lambda bad: cann.upsample_bicubic2d_backward(bad, [4, 4], [1, 1, 2, 2], False), "grad_output"),
    (lambda bad: cann._upsample_bicubic2d_aten(bad, [8, 8], False), "self"),
    (lambda bad: cann._upsample_bicubic2d_backward_aten(bad, [4, 4], [1, 1, 2, 2], False), "grad_output"),
    (lambda bad: cann.upsample_bicubic2d_aa(bad, [2, 2], False), "self"),
    (lambda bad: cann.upsample_bicubic2d_aa_backward(bad, [2, 2], [1, 1, 4, 4], False), "grad_output"),
    (lambda bad: cann._upsample_bicubic2d_aa_grad(bad, [2, 2], [1, 1, 4, 4], False), "grad_output"),
    (lambda bad: cann._upsample_bicubic2d_aa_backward_grad(bad, [2, 2], False), "self"),
    (lambda bad: cann._upsample_bicubic2d_aa_aten(bad, [2, 2], False), "self"),
    (lambda bad: cann._upsample_bicubic2d_aa_backward_aten(bad, [2, 2], [1, 1, 4, 4], False), "grad_output"),
    (lambda bad: trb.resize_bicubic(bad, size=(8, 8)), "input"),
    (lambda bad: trb.resize_bicubic(bad, size=(2, 2), antialias=True), "input"),
    (lambda bad: trb.resize_bicubic_v2_grad(bad, img2), "grads"),
    (lambda bad: trb.resize_bicubic_v2_grad(g4, bad), "original_image"),
    (lambda bad: trb.upsample_bicubic2d_backward(bad, [4, 4], [1, 1, 2, 2], False), "grad_output"),
]


def test_every_op_has_tensor_kind_cases():
    # A new op must join TENSOR_ARGS (and the C++ list of ops the rejecting kernels register for, csrc/ops.cpp).
    ops = {n.split("::")[1] for n in torch._C._dispatch_get_all_op_names() if n.startswith("cann::")}
    internal = {"_aten_override_on"}  # the override's marker, no kernel of ours behind it
    covered = {name for call, _ in TENSOR_ARGS for name in call.__code__.co_names}
    assert ops - internal <= covered, f"ops without tensor-kind cases: {sorted(ops - internal - covered)}"


@pytest.mark.filterwarnings("ignore::UserWarning")  # nested tensors are a prototype API
@pytest.mark.parametrize("mode", ["grad", "no_grad", "inference_mode"])
@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("case", range(len(TENSOR_ARGS)))
def test_none_and_other_tensor_kinds_raise_type_error_naming_the_argument(case, kind, mode):
    # Before: None met an AttributeError ('NoneType' ... 'requires_grad') or "tensor does not have a device", and
    # nested and MKL-DNN tensors a NotImplementedError, or an internal error in the Python API.
    call, arg = TENSOR_ARGS[case]
    bad = KINDS[kind]()
    context = {"grad": torch.enable_grad, "no_grad": torch.no_grad, "inference_mode": torch.inference_mode}[mode]
    with context(), pytest.raises(TypeError) as info:
        call(bad)
    assert arg in str(info.value), f"message does not name {arg!r}: {info.value}"
