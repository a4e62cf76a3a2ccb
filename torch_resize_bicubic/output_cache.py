"""The CPU output cache: the memory of large outputs (4 MiB and more), kept after PyTorch frees them for the next
output of about the same size.

A new output that large costs the operating system's page faults and zeroing on its first writes when the memory is
fresh (glibc maps every allocation over 32 MiB anew), often more than the resize that fills it, and memory from the
shared heap writes slower while other large tensors come and go; a training loop frees and asks for the same sizes
every step. Freed buffers wait in the cache, up to a limit (256 MiB unless ``RBG_CPU_OUTPUT_CACHE_MB`` says otherwise
when the package loads; 0 turns it off), until an output that fits one closely takes it; at the limit, an output that
fits none reshapes a kept buffer instead of mapping new memory. The outputs are ordinary CPU tensors.
"""
from . import _C


def output_cache_info() -> dict:
    """The cache now: ``limit_bytes``, ``cached_bytes`` and ``cached_buffers`` (freed memory kept), ``hits`` and
    ``misses`` (outputs served from kept memory, outputs that mapped new memory) and ``reshaped`` (outputs served by a
    kept buffer cut or grown to fit, keeping its pages) since the process started."""
    return _C._output_cache_info()


def empty_cache() -> int:
    """Returns every kept buffer to the operating system (outputs still in use are not touched); the bytes returned."""
    return _C._empty_output_cache()


def set_output_cache_limit(limit_bytes: int) -> None:
    """Keeps at most ``limit_bytes`` bytes of freed outputs (0: none, and large outputs come from PyTorch's
    allocator); what no longer fits is returned to the operating system now."""
    if isinstance(limit_bytes, bool) or not isinstance(limit_bytes, int):
        raise TypeError(f"set_output_cache_limit: limit_bytes is an int, not {type(limit_bytes).__name__}")
    if limit_bytes < 0:
        raise ValueError(f"set_output_cache_limit: limit_bytes is 0 or more, not {limit_bytes}")
    _C._set_output_cache_limit(limit_bytes)
