// The eager half of enable_aten_override(): CPU kernels for aten's bicubic resize and its backward, plain and
// antialiased (and their out= forms), that run this library's kernels for the inputs they cover and PyTorch's original
// kernel for the rest. (Under torch.compile the antialiased pair stays in the graph as aten's ops, which Inductor runs
// through these same kernels.)
//
// Registered once, on the first enable, and never removed: the switch is an atomic flag the kernels read per call.
// Registering and removing kernels on every toggle changed the dispatcher under calls running on other threads
// (a removed Python kernel was destroyed while a caller was inside it: PyTorch's internal asserts, then SIGSEGV).
// Here a call that starts while the switch flips runs one kernel or the other, whole; both give aten's semantics.
#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <atomic>
#include <cmath>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "aten_override.h"
#include "common/bicubic_aa_math.h"
#include "torch_checks.h"

namespace rbg {
namespace {

std::atomic<bool> routing_on{false};

// PyTorch's own CPU kernels, taken before ours replaced them (index: Routed).
enum Routed { kForward, kForwardOut, kBackward, kBackwardOut, kAaForward, kAaForwardOut, kAaBackward, kAaBackwardOut,
              kRouted };
constexpr bool is_aa(Routed w) { return w >= kAaForward; }
constexpr bool is_forward(Routed w) {
  return w == kForward || w == kForwardOut || w == kAaForward || w == kAaForwardOut;
}
constexpr bool is_out(Routed w) {
  return w == kForwardOut || w == kBackwardOut || w == kAaForwardOut || w == kAaBackwardOut;
}
std::unique_ptr<c10::SafeKernelFunction> originals[kRouted];

void call_original(Routed which, const c10::OperatorHandle& op, c10::DispatchKeySet keys, torch::jit::Stack* stack) {
  originals[which]->callBoxed(op, keys, stack);
}

std::vector<int64_t> ints(const c10::IValue& v) {
  if (v.isIntList()) return v.toIntVector();
  std::vector<int64_t> out;  // a SymInt list: concrete in eager calls
  for (const c10::SymInt& s : v.toSymIntVector()) out.push_back(s.guard_int(__FILE__, __LINE__));
  return out;
}

bool all_positive(const std::vector<int64_t>& v) {
  for (int64_t x : v)
    if (x <= 0) return false;
  return true;
}

// The inputs our kernels take: 4-D float CPU tensors (uint8 and everything else stays with PyTorch's kernels).
bool covered(const at::Tensor& t) {
  return t.device().is_cpu() && t.layout() == at::kStrided && t.dim() == 4 &&
         to_dtype(t.scalar_type()) != DType::Unsupported;
}

bool forward_covered(const at::Tensor& x, const std::vector<int64_t>& output_size) {
  return covered(x) && output_size.size() == 2 && all_positive(output_size) && all_positive(x.sizes().vec());
}

bool backward_covered(const at::Tensor& g, const std::vector<int64_t>& output_size,
                      const std::vector<int64_t>& input_size) {
  return covered(g) && output_size.size() == 2 && input_size.size() == 4 && all_positive(output_size) &&
         all_positive(input_size) &&
         g.sizes() == at::IntArrayRef({input_size[0], input_size[1], output_size[0], output_size[1]});
}

// Whether our kernel can fill an out= tensor exactly as aten would: the input's dtype and device, and either the
// result's shape (filled as it is) or no elements (resized silently to aten's layout for the result, as aten does).
// Any other out goes to PyTorch's kernel, so the exception, or the warning and restriding, is aten's.
bool out_ready(const at::Tensor& out, const at::Tensor& like, at::IntArrayRef shape, at::MemoryFormat format) {
  if (out.scalar_type() != like.scalar_type() || out.device() != like.device()) return false;
  if (out.sizes() == shape) return true;
  if (out.numel() != 0) return false;
  out.resize_(shape, format);
  return true;
}

std::optional<double> optional_double(const c10::IValue& v) {
  return v.isNone() ? std::nullopt : std::optional<double>(v.toDouble());
}

// The antialiased kernels take float32 and float64 (aten's CPU set) and scales whose window the accumulation type can
// hold: aten reads a scale only when it is > 0; a positive one so small that its inverse overflows stays aten's.
bool aa_covered(const at::Tensor& t, const c10::IValue& scale_h, const c10::IValue& scale_w) {
  if (t.scalar_type() != at::kFloat && t.scalar_type() != at::kDouble) return false;
  for (const c10::IValue* v : {&scale_h, &scale_w})
    if (!aa_scale_fits(optional_double(*v).value_or(0.0), t.scalar_type() == at::kDouble)) return false;
  return true;
}

// Our ops through the dispatcher, so that profiles name them as the Python layer's calls do.
using ForwardSig = at::Tensor(const at::Tensor&, c10::SymIntArrayRef, bool, std::optional<double>,
                              std::optional<double>);
using BackwardSig = at::Tensor(const at::Tensor&, c10::SymIntArrayRef, c10::SymIntArrayRef, bool,
                               std::optional<double>, std::optional<double>);

template <typename Sig>
c10::TypedOperatorHandle<Sig> cann_op(const char* name) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, "").typed<Sig>();
}

at::Tensor ours_forward(const c10::IValue* a, bool aa) {
  static const auto plain = cann_op<ForwardSig>("cann::_upsample_bicubic2d_aten");
  static const auto antialiased = cann_op<ForwardSig>("cann::_upsample_bicubic2d_aa_aten");
  const auto& op = aa ? antialiased : plain;
  const std::vector<int64_t> size = ints(a[1]);
  return op.call(a[0].toTensor(), c10::fromIntArrayRefSlow(size), a[2].toBool(), optional_double(a[3]),
                 optional_double(a[4]));
}

at::Tensor ours_backward(const c10::IValue* a, bool aa) {
  static const auto plain = cann_op<BackwardSig>("cann::_upsample_bicubic2d_backward_aten");
  static const auto antialiased = cann_op<BackwardSig>("cann::_upsample_bicubic2d_aa_backward_aten");
  const auto& op = aa ? antialiased : plain;
  const std::vector<int64_t> output_size = ints(a[1]), input_size = ints(a[2]);
  return op.call(a[0].toTensor(), c10::fromIntArrayRefSlow(output_size), c10::fromIntArrayRefSlow(input_size),
                 a[3].toBool(), optional_double(a[4]), optional_double(a[5]));
}

// The eight kernels: the schema's arguments are the last ones on the stack; the result replaces them.
template <Routed kWhich>
void routed_kernel(const c10::OperatorHandle& op, c10::DispatchKeySet keys, torch::jit::Stack* stack) {
  const size_t n = op.schema().arguments().size();
  const c10::IValue* a = stack->data() + (stack->size() - n);
  if (routing_on.load(std::memory_order_acquire)) {
    const at::Tensor& t = a[0].toTensor();
    std::optional<at::Tensor> result;
    constexpr bool kAa = is_aa(kWhich);
    if constexpr (is_forward(kWhich)) {
      const std::vector<int64_t> size = ints(a[1]);
      if (forward_covered(t, size) && (!kAa || aa_covered(t, a[3], a[4]))) {
        if constexpr (!is_out(kWhich)) {
          result = ours_forward(a, kAa);
        } else if (const at::Tensor& out = a[5].toTensor();
                   out_ready(out, t, {t.size(0), t.size(1), size[0], size[1]}, output_memory_format(t))) {
          result = out.copy_(ours_forward(a, kAa));
        }
      }
    } else {
      const std::vector<int64_t> output_size = ints(a[1]), input_size = ints(a[2]);
      if (backward_covered(t, output_size, input_size) && (!kAa || aa_covered(t, a[4], a[5]))) {
        if constexpr (!is_out(kWhich)) {
          result = ours_backward(a, kAa);
        } else if (const at::Tensor& out = a[6].toTensor();
                   out_ready(out, t, input_size, at::MemoryFormat::Contiguous)) {  // aten's backward: contiguous
          result = out.copy_(ours_backward(a, kAa));
        }
      }
    }
    if (result) {
      torch::jit::drop(*stack, n);
      stack->emplace_back(std::move(*result));
      return;
    }
  }
  call_original(kWhich, op, keys, stack);
}

// Discards the dispatcher's "overriding a previously registered kernel" warning: replacing aten's kernels is the point.
class QuietWarnings : public c10::WarningHandler {
 public:
  void process(const c10::Warning&) override {}
};

}  // namespace

void set_aten_override(bool on) {
  static std::once_flag registered;
  if (on) {
    std::call_once(registered, [] {
      const char* names[kRouted][2] = {{"aten::upsample_bicubic2d", ""},
                                        {"aten::upsample_bicubic2d", "out"},
                                        {"aten::upsample_bicubic2d_backward", ""},
                                        {"aten::upsample_bicubic2d_backward", "grad_input"},
                                        {"aten::_upsample_bicubic2d_aa", ""},
                                        {"aten::_upsample_bicubic2d_aa", "out"},
                                        {"aten::_upsample_bicubic2d_aa_backward", ""},
                                        {"aten::_upsample_bicubic2d_aa_backward", "grad_input"}};
      for (int i = 0; i < kRouted; ++i) {
        const c10::OperatorHandle op = c10::Dispatcher::singleton().findSchemaOrThrow(names[i][0], names[i][1]);
        originals[i] = std::make_unique<c10::SafeKernelFunction>(
            op.getComputedKernelForDispatchKey(c10::DispatchKey::CPU));
      }
      QuietWarnings quiet;
      c10::WarningUtils::WarningHandlerGuard guard(&quiet);
      // Kept for the life of the process: removing it would change the dispatcher under running calls.
      static torch::Library* const library =
          new torch::Library(torch::Library::IMPL, "aten", c10::DispatchKey::CPU, __FILE__, __LINE__);
      library->impl("upsample_bicubic2d", torch::CppFunction::makeFromBoxedFunction<&routed_kernel<kForward>>());
      library->impl("upsample_bicubic2d.out",
                    torch::CppFunction::makeFromBoxedFunction<&routed_kernel<kForwardOut>>());
      library->impl("upsample_bicubic2d_backward",
                    torch::CppFunction::makeFromBoxedFunction<&routed_kernel<kBackward>>());
      library->impl("upsample_bicubic2d_backward.grad_input",
                    torch::CppFunction::makeFromBoxedFunction<&routed_kernel<kBackwardOut>>());
      library->impl("_upsample_bicubic2d_aa", torch::CppFunction::makeFromBoxedFunction<&routed_kernel<kAaForward>>());
      library->impl("_upsample_bicubic2d_aa.out",
                    torch::CppFunction::makeFromBoxedFunction<&routed_kernel<kAaForwardOut>>());
      library->impl("_upsample_bicubic2d_aa_backward",
                    torch::CppFunction::makeFromBoxedFunction<&routed_kernel<kAaBackward>>());
      library->impl("_upsample_bicubic2d_aa_backward.grad_input",
                    torch::CppFunction::makeFromBoxedFunction<&routed_kernel<kAaBackwardOut>>());
    });
  }
  routing_on.store(on, std::memory_order_release);
}

bool aten_override_routing() { return routing_on.load(std::memory_order_acquire); }

}  // namespace rbg
