// The emulated NPU device: PrivateUse1 backed by host memory, in the way PyTorch tests its own PrivateUse1 machinery
// (its OpenReg test backend). What torch 2.13 needs for tensors, `.to()`, autograd, a conv model and an optimizer:
// an allocator, a DeviceGuardImpl (one device, one default stream, no-op events), PrivateUse1 hooks, explicit
// kernels for the factory, view, resize, set_ and copy ops and for convolution (forward and backward, so they never
// reach a fallback), and PyTorch's CPU fallback for every other op. Device memory is host memory, so a device tensor
// can be viewed as a CPU tensor without a copy: the explicit kernels do exactly that.
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/EmptyTensor.h>
#include <ATen/native/CPUFallback.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/set_native.h>
#include <ATen/ops/view_native.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <c10/core/Allocator.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/library.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#include "testing/emulated_npu.h"

namespace rbg::testing {
namespace {

constexpr c10::DeviceType kNpu = c10::DeviceType::PrivateUse1;
const c10::Device kDevice(kNpu, 0);

// ---- memory -------------------------------------------------------------------------------------------------

std::mutex allocations_mutex;
std::map<const char*, size_t> allocations;  // base -> bytes, for the race check's buffer bounds

void free_device(void* p) {
  if (p == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(allocations_mutex);
    allocations.erase(static_cast<const char*>(p));
  }
  std::free(p);
}

// Host memory; new memory is filled with 0xFF bytes (NaN in every float type), as garbage device memory, so that a
// kernel that leaves part of its output unwritten is seen.
struct DeviceAllocator final : c10::Allocator {
  c10::DataPtr allocate(size_t n) override {
    void* p = n == 0 ? nullptr : std::malloc(n);
    TORCH_CHECK(n == 0 || p != nullptr, "emulated NPU: out of memory allocating ", n, " bytes");
    if (p != nullptr) {
      std::memset(p, 0xFF, n);
      std::lock_guard<std::mutex> lock(allocations_mutex);
      allocations[static_cast<const char*>(p)] = n;
    }
    return {p, p, &free_device, kDevice};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &free_device; }
  void copy_data(void* dest, const void* src, std::size_t count) const final { std::memcpy(dest, src, count); }
};

DeviceAllocator device_allocator;

}  // namespace

size_t device_bytes_from(const void* p) {
  const char* c = static_cast<const char*>(p);
  std::lock_guard<std::mutex> lock(allocations_mutex);
  auto it = allocations.upper_bound(c);
  if (it == allocations.begin()) return 0;
  --it;
  return c < it->first + it->second ? static_cast<size_t>(it->first + it->second - c) : 0;
}

namespace {

// ---- device guard and hooks -----------------------------------------------------------------------------------

struct GuardImpl final : c10::impl::DeviceGuardImplInterface {
  c10::DeviceType type() const override { return kNpu; }
  c10::Device exchangeDevice(c10::Device d) const override {
    check(d);
    return kDevice;
  }
  c10::Device getDevice() const override { return kDevice; }
  void setDevice(c10::Device d) const override { check(d); }
  void uncheckedSetDevice(c10::Device) const noexcept override {}
  c10::Stream getStream(c10::Device d) const noexcept override { return c10::Stream(c10::Stream::DEFAULT, d); }
  c10::Stream getDefaultStream(c10::Device d) const override { return c10::Stream(c10::Stream::DEFAULT, d); }
  c10::Stream exchangeStream(c10::Stream s) const noexcept override { return c10::Stream(c10::Stream::DEFAULT, s.device()); }
  c10::DeviceIndex deviceCount() const noexcept override { return 1; }
  // Work runs synchronously on the host: events and streams have nothing to wait for.
  void record(void**, const c10::Stream&, const c10::DeviceIndex, const c10::EventFlag) const override {}
  void block(void*, const c10::Stream&) const override {}
  bool queryEvent(void*) const override { return true; }
  void destroyEvent(void*, const c10::DeviceIndex) const noexcept override {}
  bool queryStream(const c10::Stream&) const override { return true; }
  void synchronizeStream(const c10::Stream&) const override { count(HostCost::Sync); }
  void synchronizeEvent(void*) const override { count(HostCost::Sync); }
  void synchronizeDevice(const c10::DeviceIndex) const override { count(HostCost::Sync); }
  static void check(c10::Device d) {
    TORCH_CHECK(d.type() == kNpu && (d.index() == 0 || d.index() == -1), "emulated NPU: no device ", d,
                " (there is one, npu:0)");
  }
};

C10_REGISTER_GUARD_IMPL(PrivateUse1, GuardImpl);

struct Hooks final : at::PrivateUse1HooksInterface {
  bool isBuilt() const override { return true; }
  bool isAvailable() const override { return true; }
  bool hasPrimaryContext(c10::DeviceIndex) const override { return true; }
  c10::DeviceIndex deviceCount() const override { return 1; }
  c10::DeviceIndex getCurrentDevice() const override { return 0; }
  void setCurrentDevice(c10::DeviceIndex) const override {}
  c10::DeviceIndex exchangeDevice(c10::DeviceIndex) const override { return 0; }
  c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex) const override { return 0; }
  at::Device getDeviceFromPtr(void*) const override { return kDevice; }
  bool isPinnedPtr(const void*) const override { return false; }
  c10::Allocator* getPinnedMemoryAllocator() const override { return at::getCPUAllocator(); }
  const at::Generator& getDefaultGenerator(c10::DeviceIndex) const override {
    return at::detail::getDefaultCPUGenerator();  // random numbers come from the CPU fallback anyway
  }
  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t newsize) const override {
    c10::StorageImpl* impl = storage.unsafeGetStorageImpl();
    TORCH_CHECK(impl->resizable(), "emulated NPU: trying to resize storage that is not resizable");
    c10::DataPtr fresh = device_allocator.allocate(newsize);
    const size_t keep = std::min(newsize, impl->nbytes());
    if (keep > 0) std::memcpy(fresh.get(), impl->data(), keep);
    impl->set_data_ptr_noswap(std::move(fresh));
    impl->set_nbytes(newsize);
  }
};

const bool hooks_registered = [] {
  at::RegisterPrivateUse1HooksInterface(new Hooks());
  return true;
}();

// ---- aten kernels -----------------------------------------------------------------------------------------------

const c10::DispatchKeySet kNpuKeys(c10::DispatchKey::PrivateUse1);

// A CPU tensor over the same memory (device memory is host memory).
at::Tensor host_view(const at::Tensor& t) {
  if (!t.defined() || t.device().type() != kNpu) return t;
  return at::from_blob(const_cast<void*>(t.storage().data()), {static_cast<int64_t>(t.storage().nbytes())},
                       at::TensorOptions().dtype(at::kByte))
      .view(t.scalar_type())
      .as_strided(t.sizes(), t.strides(), t.storage_offset());
}

at::Tensor to_device(const at::Tensor& host) {
  if (!host.defined()) return host;
  at::Tensor out = at::detail::empty_strided_generic(host.sizes(), host.strides(), &device_allocator, kNpuKeys,
                                                     host.scalar_type());
  host_view(out).copy_(host);
  return out;
}

at::Tensor empty_memory_format(c10::IntArrayRef size, std::optional<c10::ScalarType> dtype,
                               std::optional<c10::Layout> layout, std::optional<c10::Device> device,
                               std::optional<bool>, std::optional<c10::MemoryFormat> memory_format) {
  TORCH_CHECK(c10::layout_or_default(layout) == c10::Layout::Strided, "emulated NPU: only strided tensors");
  if (device) GuardImpl::check(*device);
  return at::detail::empty_generic(size, &device_allocator, kNpuKeys, c10::dtype_or_default(dtype), memory_format);
}

at::Tensor empty_strided(c10::IntArrayRef size, c10::IntArrayRef stride, std::optional<c10::ScalarType> dtype,
                         std::optional<c10::Layout> layout, std::optional<c10::Device> device, std::optional<bool>) {
  TORCH_CHECK(c10::layout_or_default(layout) == c10::Layout::Strided, "emulated NPU: only strided tensors");
  if (device) GuardImpl::check(*device);
  return at::detail::empty_strided_generic(size, stride, &device_allocator, kNpuKeys, c10::dtype_or_default(dtype));
}

const at::Tensor& resize_(const at::Tensor& self, c10::IntArrayRef size, std::optional<c10::MemoryFormat> format) {
  c10::TensorImpl* impl = self.unsafeGetTensorImpl();
  impl->set_sizes_contiguous(size);
  const size_t needed = at::detail::computeStorageNbytesContiguous(size, self.dtype().itemsize(),
                                                                   impl->storage_offset());
  if (self.numel() > 0 && needed > self.storage().nbytes()) {
    at::detail::getPrivateUse1Hooks().resizePrivateUse1Bytes(self.storage(), needed);
  }
  if (format) impl->empty_tensor_restride(*format);
  return self;
}

at::Tensor& set_storage(at::Tensor& self, c10::Storage source, int64_t offset, c10::IntArrayRef size,
                        c10::IntArrayRef stride) {
  return at::native::set_storage_cpu_(self, std::move(source), offset, size, stride);
}

at::Tensor& set_source_storage(at::Tensor& self, c10::Storage source) {
  const int64_t numel = static_cast<int64_t>(source.nbytes() / self.dtype().itemsize());
  return set_storage(self, std::move(source), 0, {numel}, {});
}

at::Tensor& set_source_tensor(at::Tensor& self, const at::Tensor& source) {
  return set_storage(self, source.storage(), source.storage_offset(), source.sizes(), source.strides());
}

at::Tensor& set_empty(at::Tensor& self) {
  c10::Storage empty(c10::Storage::use_byte_size_t(), 0, &device_allocator, /*resizable=*/true);
  return set_storage(self, std::move(empty), 0, {0}, {});
}

// Set while PyTorch's CPU fallback runs an op on the host memory: its copies stand for a device kernel, which costs
// the host nothing, and are not counted.
thread_local int in_cpu_fallback = 0;

// Counted as torch_npu's copies cost the host: between host and device memory, a copy that is not non_blocking
// waits for the stream.
at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool non_blocking) {
  const bool counted = in_cpu_fallback == 0;
  const bool h2d = counted && self.device().type() != kNpu && dst.device().type() == kNpu;
  const bool d2h = counted && self.device().type() == kNpu && dst.device().type() != kNpu;
  if (h2d) count(HostCost::H2DCopy);
  if (d2h) count(HostCost::D2HCopy);
  if ((h2d || d2h) && !non_blocking) count(HostCost::Sync);
  host_view(dst).copy_(host_view(self));
  return dst;
}

at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst) {
  if (dst.device().type() == kNpu) {
    resize_(dst, self.sizes(), std::nullopt);
  } else {
    dst.resize_(self.sizes());
  }
  return copy_from(self, dst, false);
}

at::Scalar local_scalar_dense(const at::Tensor& self) {
  count(HostCost::D2HCopy);  // .item(): a blocking read of device memory
  count(HostCost::Sync);
  return at::_local_scalar_dense(host_view(self));
}

at::Tensor convolution(const at::Tensor& input, const at::Tensor& weight, const std::optional<at::Tensor>& bias,
                       c10::IntArrayRef stride, c10::IntArrayRef padding, c10::IntArrayRef dilation, bool transposed,
                       c10::IntArrayRef output_padding, int64_t groups) {
  std::optional<at::Tensor> host_bias;
  if (bias && bias->defined()) host_bias = host_view(*bias);
  return to_device(at::convolution(host_view(input), host_view(weight), host_bias, stride, padding, dilation,
                                   transposed, output_padding, groups));
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> convolution_backward(
    const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight, c10::IntArrayRef stride,
    c10::IntArrayRef padding, c10::IntArrayRef dilation, bool transposed, c10::IntArrayRef output_padding,
    int64_t groups, std::array<bool, 3> output_mask) {
  // The bias has one element per output channel (weight dim 0, or dim 1 times groups when transposed).
  const std::vector<int64_t> bias_sizes = {transposed ? weight.size(1) * groups : weight.size(0)};
  auto [gi, gw, gb] = at::convolution_backward(host_view(grad_output), host_view(input), host_view(weight),
                                               output_mask[2] ? at::OptionalIntArrayRef(bias_sizes) : std::nullopt,
                                               stride, padding, dilation, transposed, output_padding, groups,
                                               output_mask);
  return {to_device(gi), to_device(gw), to_device(gb)};
}

void cpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  struct Depth {
    Depth() { ++in_cpu_fallback; }
    ~Depth() { --in_cpu_fallback; }
  } depth;
  at::native::cpu_fallback(op, stack);
}

}  // namespace
}  // namespace rbg::testing

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  using namespace rbg::testing;
  m.impl("empty.memory_format", &empty_memory_format);
  m.impl("empty_strided", &empty_strided);
  m.impl("as_strided", &at::native::as_strided_tensorimpl);
  m.impl("view", &at::native::view);
  m.impl("_reshape_alias", &at::native::_reshape_alias);
  m.impl("resize_", &resize_);
  m.impl("set_.source_Storage", &set_source_storage);
  m.impl("set_.source_Storage_storage_offset", &set_storage);
  m.impl("set_.source_Tensor", &set_source_tensor);
  m.impl("set_", &set_empty);
  m.impl("_copy_from", &copy_from);
  m.impl("_copy_from_and_resize", &copy_from_and_resize);
  m.impl("_local_scalar_dense", &local_scalar_dense);
  m.impl("convolution_overrideable", &convolution);
  m.impl("convolution_backward_overrideable", &convolution_backward);
}

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&rbg::testing::cpu_fallback>());
}
