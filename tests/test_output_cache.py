"""The CPU output cache: large outputs (4 MiB and more) reuse the memory of freed ones of about the same size, and
never memory that a live tensor still holds; at the limit, an output that fits none reshapes a kept buffer. Each test
sets the limit it needs and restores the process's."""
import os
import subprocess
import sys
import threading

import pytest
import torch
import torch.nn.functional as F

import torch_resize_bicubic as trb

MIB = 1 << 20
THRESHOLD = 4 * MIB
# An image whose gradient is just over 32 MiB of float32 (34 MiB of whole 2 MiB pages), and one of 16 MiB.
IMAGE = (1, 1, 2900, 2900)
SMALLER = (1, 1, 2000, 2000)


@pytest.fixture
def cache():
    saved = trb.output_cache_info()["limit_bytes"]
    trb.set_output_cache_limit(256 * MIB)
    trb.empty_cache()
    start = trb.output_cache_info()

    def info():  # hits, misses and reshapes since the test began
        now = trb.output_cache_info()
        return {**now, **{k: now[k] - start[k] for k in ("hits", "misses", "reshaped")}}

    yield info
    trb.set_output_cache_limit(saved)
    trb.empty_cache()


def gradient(shape=IMAGE, grad_hw=(64, 64), channels_last=False):
    g = torch.randn(shape[0], shape[1], *grad_hw, generator=torch.Generator().manual_seed(1))
    if channels_last:
        g = g.contiguous(memory_format=torch.channels_last)
    image = torch.empty(1).expand(shape)
    return lambda: trb.resize_bicubic_v2_grad(g, image)


def resize(out_hw=IMAGE[2:], antialias=False, channels_last=False):
    x = torch.randn(1, 1, 333, 300, generator=torch.Generator().manual_seed(2))
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    return lambda: trb.resize_bicubic(x, size=out_hw, antialias=antialias)


def aa_gradient():
    g = torch.randn(1, 1, 64, 64, generator=torch.Generator().manual_seed(3))
    return lambda: torch.ops.cann.upsample_bicubic2d_aa_backward(g, [64, 64], list(IMAGE), False, None, None)


def uncached(fn):
    saved = trb.output_cache_info()["limit_bytes"]
    trb.set_output_cache_limit(0)
    try:
        return fn()
    finally:
        trb.set_output_cache_limit(saved)


@pytest.mark.parametrize("make", [gradient, resize, lambda: resize(antialias=True), aa_gradient,
                                  lambda: gradient(channels_last=True), lambda: resize(channels_last=True)],
                         ids=["gradient", "forward", "aa_forward", "aa_gradient", "gradient_cl", "forward_cl"])
def test_freed_output_is_reused_and_written_whole(cache, make):
    op = make()
    expected = uncached(op)
    first = op()
    assert first.nbytes >= THRESHOLD and cache()["misses"] == 1 and cache()["hits"] == 0
    address = first.data_ptr()
    first.fill_(float("nan"))  # what the next output must overwrite everywhere
    del first
    assert cache()["cached_buffers"] == 1
    second = op()
    assert second.data_ptr() == address and cache()["hits"] == 1 and cache()["cached_buffers"] == 0
    assert second.stride() == expected.stride()
    assert torch.equal(second, expected)


def test_live_memory_is_never_reused(cache):
    op = gradient()
    kept = op()
    view = op()[0, 0, 10:20]  # the output itself is gone, its storage lives on in the view
    fresh = op()
    addresses = {kept.data_ptr(), view.untyped_storage().data_ptr(), fresh.data_ptr()}
    assert len(addresses) == 3 and cache()["hits"] == 0
    del view
    assert cache()["cached_buffers"] == 1
    assert op().data_ptr() not in {kept.data_ptr(), fresh.data_ptr()}


def test_only_a_close_fit_is_taken(cache):
    big = gradient(shape=(1, 1, 4000, 4000))()  # 64 MB
    del big
    small = gradient()()  # 34 MB: the kept 64 MB would waste most of itself
    assert cache()["hits"] == 0 and cache()["misses"] == 2 and cache()["cached_buffers"] == 1
    assert cache()["reshaped"] == 0  # 64 + 34 MiB stay under the limit: both are kept
    del small
    assert cache()["cached_buffers"] == 2


def kept_then_freed_with_nan(op):
    out = op()
    address = out.data_ptr()
    out.fill_(float("nan"))  # what a reshaped buffer's next output must overwrite everywhere
    return address


def test_at_the_limit_a_larger_kept_buffer_is_cut_to_fit(cache):
    op = gradient(shape=SMALLER)  # 16 MiB: no close fit, and mapping it would keep 50 MiB
    expected = uncached(op)
    trb.set_output_cache_limit(40 * MIB)
    address = kept_then_freed_with_nan(gradient())  # 34 MiB kept
    out = op()
    assert cache()["reshaped"] == 1 and cache()["misses"] == 1 and cache()["cached_buffers"] == 0
    assert out.data_ptr() == address and torch.equal(out, expected)
    del out
    assert cache()["cached_bytes"] == 16 * MIB  # the tail went back to the system


def test_at_the_limit_a_smaller_kept_buffer_grows_to_fit(cache):
    op = gradient()  # 34 MiB: 50 MiB with the kept one
    expected = uncached(op)
    trb.set_output_cache_limit(40 * MIB)
    kept_then_freed_with_nan(gradient(shape=SMALLER))  # 16 MiB kept
    out = op()
    assert cache()["reshaped"] == 1 and cache()["misses"] == 1 and cache()["cached_buffers"] == 0
    assert torch.equal(out, expected) and out.data_ptr() % (2 * MIB) == 0  # moved, if at all, to whole huge pages
    del out
    assert cache()["cached_bytes"] == 34 * MIB


def test_sizes_that_vary_reuse_the_kept_memory(cache):
    # buffers of 6, 34, 12, 22, 8, 34, 6 MiB, one alive at a time: under the limit each new size maps its own; from
    # the 22 on, the kept ones fill it, so the 22 cuts the 34 and the second 34 grows the 22; the last 6 fits.
    ops = [gradient(shape=(1, 1, side, side)) for side in (1100, 2900, 1700, 2400, 1300, 2900, 1100)]
    expected = [uncached(op) for op in ops]
    trb.set_output_cache_limit(64 * MIB)
    for op, want in zip(ops, expected):
        out = op()
        assert torch.equal(out, want)
        out.fill_(float("nan"))
        del out
    info = cache()
    assert (info["misses"], info["reshaped"], info["hits"]) == (4, 2, 1)
    assert info["cached_bytes"] == (34 + 8 + 12 + 6) * MIB


def test_limit_evicts_the_oldest_and_empty_cache_returns_all(cache):
    trb.set_output_cache_limit(40 * MIB)
    op = gradient()
    a, b = op(), op()  # 34 MiB buffers each (whole 2 MiB pages)
    address_b = b.data_ptr()
    del b, a  # b kept first, then a: 68 MiB over the limit, so b (the oldest) goes
    info = cache()
    assert info["cached_buffers"] == 1 and info["cached_bytes"] == 34 * MIB
    assert op().data_ptr() != address_b
    assert trb.empty_cache() == 34 * MIB and cache()["cached_bytes"] == 0


def test_outputs_beyond_the_limit_or_below_the_threshold_are_pytorch_allocations(cache):
    trb.set_output_cache_limit(32 * MIB)  # the 34 MiB output does not fit
    out = gradient()()
    trb.set_output_cache_limit(256 * MIB)
    small = gradient(shape=(1, 1, 1000, 1000))()  # 3.8 MiB, under the threshold
    assert small.nbytes < THRESHOLD
    del out, small
    assert cache()["misses"] == 0 and cache()["cached_buffers"] == 0


def test_limit_zero_turns_it_off_and_releases_what_is_kept(cache):
    gradient()()  # freed at once, kept
    assert cache()["cached_buffers"] == 1
    trb.set_output_cache_limit(0)
    assert cache()["cached_bytes"] == 0
    before = cache()
    expected = gradient()()
    assert cache() == before  # no hit, no miss: PyTorch's allocator
    trb.set_output_cache_limit(256 * MIB)
    assert torch.equal(gradient()(), expected)


def test_a_cached_output_is_an_ordinary_resizable_tensor(cache):
    out = gradient()()
    head = out.flatten()[:1000].clone()
    out.resize_(2, *IMAGE[1:])  # a larger storage from the same allocator: the cache maps it, data kept
    assert torch.equal(out.flatten()[:1000], head)
    out[1] = 1.0
    assert out.untyped_storage().nbytes() == 2 * out[0].nbytes
    out.resize_(1, 1, 10, 10)  # shrinking keeps the storage
    assert out.sum().isfinite()
    doubled = out * 2  # aten's own outputs stay PyTorch's
    assert torch.equal(doubled, out + out)


def test_sharing_moves_an_output_out_and_returns_its_buffer(cache):
    out = gradient()()
    expected = out.clone()
    out.share_memory_()  # PyTorch copies it into shared memory and frees the old storage
    assert out.is_shared() and torch.equal(out, expected)
    assert cache()["cached_buffers"] == 1
    again = gradient()()  # takes the returned buffer; the shared tensor keeps its values
    assert cache()["hits"] == 1 and torch.equal(out, expected) and torch.equal(again, expected)


def test_autograd_gradients_come_through_it(cache):
    x = torch.randn(*IMAGE, requires_grad=True)
    for _ in range(3):
        trb.resize_bicubic(x, size=(64, 64)).square().sum().backward()
    expected = x.detach().clone().requires_grad_()
    F.interpolate(expected, size=(64, 64), mode="bicubic").square().sum().backward()
    torch.testing.assert_close(x.grad, 3 * expected.grad)
    assert cache()["hits"] >= 1


def test_threads_free_and_take_concurrently(cache):
    op = gradient()
    expected = uncached(op)
    errors = []

    def work():
        for _ in range(6):
            out = op()
            if not torch.equal(out, expected):
                errors.append("wrong values")
            out.fill_(float("nan"))

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and cache()["hits"] + cache()["misses"] + cache()["reshaped"] == 18


LIMIT_SCRIPT = "import torch_resize_bicubic as t, warnings; print(t.output_cache_info()['limit_bytes'])"


def limit_in_fresh_process(value):
    env = {k: v for k, v in os.environ.items() if k != "RBG_CPU_OUTPUT_CACHE_MB"}
    if value is not None:
        env["RBG_CPU_OUTPUT_CACHE_MB"] = value
    done = subprocess.run([sys.executable, "-c", LIMIT_SCRIPT], env=env, capture_output=True, text=True, check=True)
    return int(done.stdout.split()[-1]), done.stderr


def test_environment_sets_the_limit():
    default, _ = limit_in_fresh_process(None)
    assert default in (0, 256 * MIB)  # 0 in sanitizer builds, whose checker cannot see these mappings
    assert limit_in_fresh_process("64")[0] == 64 * MIB
    assert limit_in_fresh_process("0")[0] == 0
    for bad in ("lots", "-1", "1.5"):
        limit, stderr = limit_in_fresh_process(bad)
        assert limit == default and "RBG_CPU_OUTPUT_CACHE_MB" in stderr


@pytest.mark.parametrize("bad,error", [(-1, ValueError), (1.5, TypeError), (True, TypeError), ("1", TypeError)])
def test_set_output_cache_limit_rejects(bad, error):
    with pytest.raises(error, match="limit_bytes"):
        trb.set_output_cache_limit(bad)
