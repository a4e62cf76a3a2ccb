// The autograd graph node of the antialiased pair on plain eager CPU tensors, in C++.
//
// The Python autograd kernel of each op (torch_resize_bicubic/_meta.py) records a torch.autograd.Function, which
// works under every transform and mode but costs tens of microseconds per forward + backward in Python (apply,
// setup_context, the backward and its adjoint's own Python kernel): a fifth of a ViT position-embedding step. For
// a plain CPU tensor with no transform or dispatch mode active, that kernel calls these functions instead: the
// same op below autograd and a C++ node whose backward is the same adjoint, called below autograd unless the
// backward itself is being differentiated (create_graph), when it goes through the dispatcher and records.
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/extension.h>

#include <optional>
#include <vector>

#include "aa_graph_node.h"

namespace rbg {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

using AaForwardFn = at::Tensor(const at::Tensor&, c10::SymIntArrayRef, bool, std::optional<double>,
                               std::optional<double>);
using AaTransposeFn = at::Tensor(const at::Tensor&, c10::SymIntArrayRef, c10::SymIntArrayRef, bool,
                                 std::optional<double>, std::optional<double>);

at::Tensor aa_forward(const at::Tensor& x, c10::SymIntArrayRef output_size, bool align_corners,
                      std::optional<double> scales_h, std::optional<double> scales_w) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("cann::upsample_bicubic2d_aa", "")
                             .typed<AaForwardFn>();
  return op.call(x, output_size, align_corners, scales_h, scales_w);
}

// cann::_upsample_bicubic2d_aa_grad: the transpose of the forward (the arguments name the forward's sizes).
at::Tensor aa_transpose(const at::Tensor& g, c10::SymIntArrayRef output_size, c10::SymIntArrayRef input_size,
                        bool align_corners, std::optional<double> scales_h, std::optional<double> scales_w) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("cann::_upsample_bicubic2d_aa_grad", "")
                             .typed<AaTransposeFn>();
  return op.call(g, output_size, input_size, align_corners, scales_h, scales_w);
}

// The arguments both nodes keep: the forward's sizes and scales, whichever op is the node's forward.
void save_args(AutogradContext* ctx, std::vector<int64_t> output_size, std::vector<int64_t> input_size,
               bool align_corners, std::optional<double> scales_h, std::optional<double> scales_w) {
  ctx->saved_data["output_size"] = std::move(output_size);
  ctx->saved_data["input_size"] = std::move(input_size);
  ctx->saved_data["align_corners"] = align_corners;
  ctx->saved_data["scales_h"] = scales_h;
  ctx->saved_data["scales_w"] = scales_w;
}

struct SavedArgs {
  std::vector<int64_t> output_size, input_size;
  bool align_corners;
  std::optional<double> scales_h, scales_w;
};

SavedArgs saved_args(AutogradContext* ctx) {
  auto& d = ctx->saved_data;
  return {d["output_size"].toIntVector(), d["input_size"].toIntVector(), d["align_corners"].toBool(),
          d["scales_h"].toOptional<double>(), d["scales_w"].toOptional<double>()};
}

// Below autograd unless the backward is itself recorded (create_graph): then through the op's autograd kernel.
template <typename F>
at::Tensor adjoint_call(F&& call) {
  if (at::GradMode::is_enabled()) return call();
  at::AutoDispatchBelowADInplaceOrView below;
  return call();
}

struct AaForwardNode : torch::autograd::Function<AaForwardNode> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, std::vector<int64_t> output_size,
                            bool align_corners, std::optional<double> scales_h, std::optional<double> scales_w) {
    save_args(ctx, output_size, x.sizes().vec(), align_corners, scales_h, scales_w);
    at::AutoDispatchBelowADInplaceOrView below;
    return aa_forward(x, c10::fromIntArrayRefSlow(output_size), align_corners, scales_h, scales_w);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const SavedArgs a = saved_args(ctx);
    at::Tensor gx = adjoint_call([&] {
      return aa_transpose(grads[0], c10::fromIntArrayRefSlow(a.output_size), c10::fromIntArrayRefSlow(a.input_size),
                          a.align_corners, a.scales_h, a.scales_w);
    });
    return {gx, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

struct AaTransposeNode : torch::autograd::Function<AaTransposeNode> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& g, std::vector<int64_t> output_size,
                            std::vector<int64_t> input_size, bool align_corners, std::optional<double> scales_h,
                            std::optional<double> scales_w) {
    save_args(ctx, output_size, input_size, align_corners, scales_h, scales_w);
    at::AutoDispatchBelowADInplaceOrView below;
    return aa_transpose(g, c10::fromIntArrayRefSlow(output_size), c10::fromIntArrayRefSlow(input_size),
                        align_corners, scales_h, scales_w);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const SavedArgs a = saved_args(ctx);
    at::Tensor gg = adjoint_call([&] {
      return aa_forward(grads[0], c10::fromIntArrayRefSlow(a.output_size), a.align_corners, a.scales_h,
                        a.scales_w);
    });
    return {gg, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

at::Tensor upsample_bicubic2d_aa_recorded(const at::Tensor& x, std::vector<int64_t> output_size, bool align_corners,
                                          std::optional<double> scales_h, std::optional<double> scales_w) {
  return AaForwardNode::apply(x, std::move(output_size), align_corners, scales_h, scales_w);
}

at::Tensor upsample_bicubic2d_aa_grad_recorded(const at::Tensor& g, std::vector<int64_t> output_size,
                                               std::vector<int64_t> input_size, bool align_corners,
                                               std::optional<double> scales_h, std::optional<double> scales_w) {
  return AaTransposeNode::apply(g, std::move(output_size), std::move(input_size), align_corners, scales_h,
                                scales_w);
}

}  // namespace rbg
