// The Python module torch_resize_bicubic._npu: importing it runs the static TORCH_LIBRARY_IMPL(cann,
// PrivateUse1) registration of resize_bicubic_v2_grad_npu.cpp. It has no Python-level content.
#include <Python.h>

PyMODINIT_FUNC PyInit__npu(void) {
  static PyModuleDef module = {PyModuleDef_HEAD_INIT, "_npu", "NPU (PrivateUse1) kernels of the cann ops", -1,
                               nullptr, nullptr, nullptr, nullptr, nullptr};
  return PyModule_Create(&module);
}
