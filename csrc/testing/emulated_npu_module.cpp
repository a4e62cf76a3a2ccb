// The Python module torch_resize_bicubic.testing._emulated_npu. Loading it registers the emulated NPU device
// (emulated_npu_device.cpp) and, through the glue compiled into it, the cann ops' PrivateUse1 kernels from
// csrc/npu/; its functions set the reported core count and read the launch log.
#include <torch/extension.h>

#include "testing/emulated_npu.h"

PYBIND11_MODULE(_emulated_npu, m) {
  m.doc() = "Emulated NPU device (PrivateUse1 on host memory) running this project's NPU glue and kernel bodies";
  m.def("set_core_num", &rbg::testing::set_core_num, "vector cores the device reports to the glue");
  m.def("core_num", &rbg::testing::core_num);
  m.def("clear_launches", &rbg::testing::clear_launches);
  m.def("launches", [] {
    pybind11::list out;
    for (const auto& r : rbg::testing::launches()) {
      pybind11::dict d;
      d["tiling_key"] = r.tiling_key;
      d["block_dim"] = r.block_dim;
      d["workspace_bytes"] = r.workspace_bytes;
      d["dtype"] = r.dtype;
      out.append(d);
    }
    return out;
  });
  m.def("synchronize", [] { rbg::testing::count(rbg::testing::HostCost::Sync); });
  m.def("counters", [] {
    const rbg::testing::HostCosts c = rbg::testing::counters();
    pybind11::dict d;
    d["h2d_copies"] = c.h2d_copies;
    d["d2h_copies"] = c.d2h_copies;
    d["syncs"] = c.syncs;
    d["launches"] = c.launches;
    return d;
  });
}
