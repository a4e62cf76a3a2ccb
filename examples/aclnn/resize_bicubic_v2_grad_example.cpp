// The seed's aclnn example, for this project's op: ResizeBicubicV2Grad through the two-phase aclnn API that CANN's
// opbuild generates from our OpDef (aclnn_resize_bicubic_v2_grad.h, in the installed op package's op_api/include).
// Seven steps: init, device and stream; tensors; sizes; GetWorkspaceSize then execute; synchronize; copy back and
// print; release. Data: grads {1, 2, 3, 4.1} of shape (1, 1, 2, 2) -> y of shape (1, 1, 3, 3), align_corners=true,
// scales 1.1 (ignored with align_corners, as in PyTorch). Build: CMakeLists.txt beside this file (docs/npu.md).
#include <cstdint>
#include <cstdio>
#include <vector>

#include "acl/acl.h"
#include "aclnn_resize_bicubic_v2_grad.h"

#define CHECK_RET(cond, what)                                              \
  do {                                                                     \
    if (!(cond)) {                                                         \
      std::printf("failed: %s (line %d)\n", what, __LINE__);               \
      return 1;                                                            \
    }                                                                      \
  } while (0)

namespace {

int64_t ElementCount(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// Copies host data to a new device buffer and wraps it in a contiguous NCHW aclTensor.
int CreateAclTensor(const std::vector<float>& host, const std::vector<int64_t>& shape, void** device,
                    aclTensor** tensor) {
  const size_t bytes = static_cast<size_t>(ElementCount(shape)) * sizeof(float);
  CHECK_RET(aclrtMalloc(device, bytes, ACL_MEM_MALLOC_HUGE_FIRST) == ACL_SUCCESS, "aclrtMalloc");
  CHECK_RET(aclrtMemcpy(*device, bytes, host.data(), bytes, ACL_MEMCPY_HOST_TO_DEVICE) == ACL_SUCCESS, "aclrtMemcpy");
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i) strides[i] = shape[i + 1] * strides[i + 1];
  *tensor = aclCreateTensor(shape.data(), shape.size(), ACL_FLOAT, strides.data(), 0, ACL_FORMAT_NCHW, shape.data(),
                            shape.size(), *device);
  CHECK_RET(*tensor != nullptr, "aclCreateTensor");
  return 0;
}

}  // namespace

int main() {
  // 1. Init, device and stream.
  const int32_t device_id = 0;
  aclrtStream stream = nullptr;
  CHECK_RET(aclInit(nullptr) == ACL_SUCCESS, "aclInit");
  CHECK_RET(aclrtSetDevice(device_id) == ACL_SUCCESS, "aclrtSetDevice");
  CHECK_RET(aclrtCreateStream(&stream) == ACL_SUCCESS, "aclrtCreateStream");

  // 2. Tensors: grads (the 2x2 gradient), original_image (only its shape is read) and the 3x3 output y.
  const std::vector<int64_t> grads_shape = {1, 1, 2, 2};
  const std::vector<int64_t> image_shape = {1, 1, 3, 3};
  const std::vector<float> grads_host = {1.0f, 2.0f, 3.0f, 4.1f};
  std::vector<float> image_host(ElementCount(image_shape), 0.0f), y_host(ElementCount(image_shape), 0.0f);
  void *grads_dev = nullptr, *image_dev = nullptr, *y_dev = nullptr;
  aclTensor *grads = nullptr, *image = nullptr, *y = nullptr;
  CHECK_RET(CreateAclTensor(grads_host, grads_shape, &grads_dev, &grads) == 0, "grads");
  CHECK_RET(CreateAclTensor(image_host, image_shape, &image_dev, &image) == 0, "original_image");
  CHECK_RET(CreateAclTensor(y_host, image_shape, &y_dev, &y) == 0, "y");

  // 3. Sizes and attributes: align_corners and scales (grads size / image size per axis).
  const bool align_corners = true;
  const float scales_host[2] = {1.1f, 1.1f};
  aclFloatArray* scales = aclCreateFloatArray(scales_host, 2);
  CHECK_RET(scales != nullptr, "aclCreateFloatArray");

  // 4. First phase: validate and size the workspace; second phase: launch on the stream.
  uint64_t workspace_size = 0;
  aclOpExecutor* executor = nullptr;
  CHECK_RET(aclnnResizeBicubicV2GradGetWorkspaceSize(grads, image, align_corners, scales, y, &workspace_size,
                                                     &executor) == ACL_SUCCESS,
            "aclnnResizeBicubicV2GradGetWorkspaceSize");
  void* workspace = nullptr;
  if (workspace_size > 0) {
    CHECK_RET(aclrtMalloc(&workspace, workspace_size, ACL_MEM_MALLOC_HUGE_FIRST) == ACL_SUCCESS, "workspace");
  }
  CHECK_RET(aclnnResizeBicubicV2Grad(workspace, workspace_size, executor, stream) == ACL_SUCCESS,
            "aclnnResizeBicubicV2Grad");

  // 5. Synchronize.
  CHECK_RET(aclrtSynchronizeStream(stream) == ACL_SUCCESS, "aclrtSynchronizeStream");

  // 6. Copy back and print, beside what PyTorch's CPU kernel gives:
  //    torch.ops.aten.upsample_bicubic2d_backward(grads, [2, 2], [1, 1, 3, 3], True, 1.1, 1.1)
  const float expected[9] = {1.0f, 0.0f, 2.0f, 0.0f, 0.0f, 0.0f, 3.0f, 0.0f, 4.1f};
  const size_t y_bytes = y_host.size() * sizeof(float);
  CHECK_RET(aclrtMemcpy(y_host.data(), y_bytes, y_dev, y_bytes, ACL_MEMCPY_DEVICE_TO_HOST) == ACL_SUCCESS,
            "aclrtMemcpy back");
  int mismatches = 0;
  for (size_t i = 0; i < y_host.size(); ++i) {
    const bool same = y_host[i] == expected[i];
    mismatches += same ? 0 : 1;
    std::printf("y[%zu] = %g (PyTorch CPU: %g)%s\n", i, y_host[i], expected[i], same ? "" : "  <- differs");
  }

  // 7. Release.
  aclDestroyTensor(grads);
  aclDestroyTensor(image);
  aclDestroyTensor(y);
  aclDestroyFloatArray(scales);
  aclrtFree(grads_dev);
  aclrtFree(image_dev);
  aclrtFree(y_dev);
  if (workspace != nullptr) aclrtFree(workspace);
  aclrtDestroyStream(stream);
  aclrtResetDevice(device_id);
  aclFinalize();
  return mismatches == 0 ? 0 : 2;
}
