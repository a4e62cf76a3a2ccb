"""Testing helpers of torch_resize_bicubic: ``emulated_npu``, an NPU device without hardware."""
