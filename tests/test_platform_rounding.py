"""Which rounding of the cubic source coordinate s * (x + 0.5) - 0.5 each side uses, against float64 weights.

The engine rounds it twice, as written, on every platform; PyTorch's x86 builds do too, its aarch64 builds fuse it
into one multiply-add (GCC's default contraction there). tests/helpers.py probes the installed PyTorch once and, where
it fuses, adds the effect on the weights to every comparison with it (fused_rounding_term). These tests hold
that up against float64: the weights each side applies, read off its float32 gradient of unit inputs, are the cubic's
float64 weights at that side's coordinates, within the float32 evaluation of the weights, and not at the others."""
import pytest
import torch

from helpers import (PYTORCH_FUSES_SOURCE_COORDINATES, WEIGHT_ERROR_FLOAT32, aten_backward, axis_matrix,
                     cubic_matrix, fused_rounding_term, magnitude_of_terms, source_coordinates)

# (output length, input length, align_corners, scale): coordinates near 1024 and 64, a given scale, align_corners
CASES = [(224, 1920, False, None), (40, 301, False, None), (90, 1300, False, 0.07), (64, 129, True, None),
         (33, 2047, False, None)]


def engine_axis_matrix(out_len, in_len, align, scale):
    """The weights the engine's float32 backward applies along W, read off unit gradients as helpers.axis_matrix
    reads PyTorch's."""
    eye = torch.eye(out_len).reshape(out_len, 1, 1, out_len)
    cols = torch.ops.cann.resize_bicubic_v2_grad(eye, torch.empty(out_len, 1, 2, in_len), align,
                                                 [0.0, 0.0 if scale is None else scale])
    return cols.sum(-2).reshape(out_len, in_len).double()


@pytest.mark.parametrize("out_len, in_len, align, scale", CASES)
def test_each_side_applies_the_weights_of_its_coordinates(out_len, in_len, align, scale):
    twice, once = source_coordinates(out_len, in_len, align, scale)
    (at_twice, taps_twice), (at_once, taps_once) = cubic_matrix(twice, in_len), cubic_matrix(once, in_len)
    engine = engine_axis_matrix(out_len, in_len, align, scale)
    pytorch = axis_matrix(out_len, in_len, align, scale, torch.float32)
    # each tap weight evaluated in float32 (up to four taps folded into one entry at the borders)
    assert ((engine - at_twice).abs() <= WEIGHT_ERROR_FLOAT32 * taps_twice).all()
    expected, taps = (at_once, taps_once) if PYTORCH_FUSES_SOURCE_COORDINATES else (at_twice, taps_twice)
    assert ((pytorch - expected).abs() <= WEIGHT_ERROR_FLOAT32 * taps).all()
    if (twice != once).any():  # the rules are told apart: the other rule fails the same check
        assert not ((engine - at_once).abs() <= WEIGHT_ERROR_FLOAT32 * taps_once).all()


def test_the_rules_differ_where_the_probe_needs_them_to():
    twice, once = source_coordinates(224, 1920, False, None)
    assert (twice != once).any() and not (source_coordinates(64, 129, True, None)[0] !=
                                               source_coordinates(64, 129, True, None)[1]).any()


def test_the_fused_rounding_term_covers_the_difference_and_only_where_pytorch_fuses():
    g = torch.randn(1, 2, 7, 224, generator=torch.Generator().manual_seed(3))
    in_hw = (13, 1920)
    ours_dx = torch.ops.cann.resize_bicubic_v2_grad(g, torch.empty(1, 2, *in_hw), False, [0.0, 0.0])
    diff = (ours_dx.double() - aten_backward(g, in_hw, False).double()).abs()
    term = fused_rounding_term(g, (7, 224), in_hw, False, (None, None), torch.float32)
    order = 2 * 36 * torch.finfo(torch.float32).eps * magnitude_of_terms(g, in_hw, False, (None, None))
    assert (diff <= order + term).all()
    if PYTORCH_FUSES_SOURCE_COORDINATES:
        assert (diff > order).any() and (term > 0).any()  # the term is needed, and it is there
    else:
        assert (diff <= order).all() and (term == 0).all()
