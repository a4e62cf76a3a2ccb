// The autograd graph nodes of the library's linear ops on plain eager CPU tensors, in C++.
//
// The Python autograd kernel of each op (torch_resize_bicubic/_meta.py) records a torch.autograd.Function, which
// works under every transform and mode but costs tens of microseconds per forward + backward in Python (apply,
// setup_context, the backward and its adjoint's own Python kernel): a tenth to a fifth of a small training step.
// For a plain CPU tensor with no transform or dispatch mode active, that kernel calls these functions instead: the
// same op below autograd and a C++ node whose backward is the same adjoint as _meta.py's, called below autograd
// unless the backward itself is being differentiated (create_graph), when it goes through the dispatcher and
// records in turn. Both paths give the same bits (tests/test_autograd.py, tests/test_antialias.py).
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/extension.h>

#include <algorithm>
#include <optional>
#include <vector>

#include "eager_graph_nodes.h"

namespace rbg {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

template <typename Signature>
c10::TypedOperatorHandle<Signature> cann_op(const char* name) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, "").typed<Signature>();
}

using ResizeFn = at::Tensor(const at::Tensor&, c10::SymIntArrayRef, bool, at::ArrayRef<double>);
using ResizeGradFn = at::Tensor(const at::Tensor&, const at::Tensor&, bool, at::ArrayRef<double>);
using AaForwardFn = at::Tensor(const at::Tensor&, c10::SymIntArrayRef, bool, std::optional<double>,
                               std::optional<double>);
using AaTransposeFn = at::Tensor(const at::Tensor&, c10::SymIntArrayRef, c10::SymIntArrayRef, bool,
                                 std::optional<double>, std::optional<double>);

at::Tensor resize(const at::Tensor& x, at::IntArrayRef size, bool align_corners, at::ArrayRef<double> scales) {
  static const auto op = cann_op<ResizeFn>("cann::resize_bicubic_v2");
  return op.call(x, c10::fromIntArrayRefSlow(size), align_corners, scales);
}

at::Tensor resize_grad(const at::Tensor& g, const at::Tensor& image, bool align_corners, at::ArrayRef<double> scales) {
  static const auto op = cann_op<ResizeGradFn>("cann::resize_bicubic_v2_grad");
  return op.call(g, image, align_corners, scales);
}

at::Tensor resize_exact_adjoint(const at::Tensor& g, const at::Tensor& image, bool align_corners,
                                at::ArrayRef<double> scales) {
  static const auto op = cann_op<ResizeGradFn>("cann::_resize_bicubic_v2_grad_adjoint");
  return op.call(g, image, align_corners, scales);
}

at::Tensor aa_forward(const at::Tensor& x, at::IntArrayRef output_size, bool align_corners,
                      std::optional<double> scales_h, std::optional<double> scales_w) {
  static const auto op = cann_op<AaForwardFn>("cann::upsample_bicubic2d_aa");
  return op.call(x, c10::fromIntArrayRefSlow(output_size), align_corners, scales_h, scales_w);
}

// cann::_upsample_bicubic2d_aa_grad: the transpose of the forward (the arguments name the forward's sizes).
at::Tensor aa_transpose(const at::Tensor& g, at::IntArrayRef output_size, at::IntArrayRef input_size,
                        bool align_corners, std::optional<double> scales_h, std::optional<double> scales_w) {
  static const auto op = cann_op<AaTransposeFn>("cann::_upsample_bicubic2d_aa_grad");
  return op.call(g, c10::fromIntArrayRefSlow(output_size), c10::fromIntArrayRefSlow(input_size), align_corners,
                 scales_h, scales_w);
}

// A tensor of `shape` that costs no memory: the grad ops read only their original_image's shape.
at::Tensor shape_only(const at::Tensor& like, at::IntArrayRef shape) { return like.new_empty({}).expand(shape); }

bool same_hw(at::IntArrayRef a, at::IntArrayRef b) { return a[a.size() - 2] == b[b.size() - 2] && a.back() == b.back(); }

// An adjoint call: below autograd unless the backward is itself recorded (create_graph), then through the op's
// autograd kernel.
template <typename F>
at::Tensor adjoint_call(F&& call) {
  if (at::GradMode::is_enabled()) return call();
  at::AutoDispatchBelowADInplaceOrView below;
  return call();
}

template <typename F>
at::Tensor forward_call(F&& call) {
  at::AutoDispatchBelowADInplaceOrView below;
  return call();
}

// The sizes, scales and flags a node's backward needs, kept in the context's saved_data.
struct Saved {
  AutogradContext* ctx;
  void put(const char* key, c10::IValue v) { ctx->saved_data[key] = std::move(v); }
  std::vector<int64_t> ints(const char* key) { return ctx->saved_data[key].toIntVector(); }
  std::vector<double> doubles(const char* key) { return ctx->saved_data[key].toDoubleVector(); }
  std::optional<double> maybe_double(const char* key) { return ctx->saved_data[key].toOptional<double>(); }
  bool flag(const char* key) { return ctx->saved_data[key].toBool(); }
};

// The plain pair's nodes keep the shape they read from, the shape they resample to, and the flags.
struct ResizeArgs {
  std::vector<int64_t> from, to;
  bool align_corners;
  std::vector<double> scales;
};

void save_resize(AutogradContext* ctx, ResizeArgs a) {
  Saved s{ctx};
  s.put("from", std::move(a.from));
  s.put("to", std::move(a.to));
  s.put("align_corners", a.align_corners);
  s.put("scales", std::move(a.scales));
}

ResizeArgs saved_resize(AutogradContext* ctx) {
  Saved s{ctx};
  return {s.ints("from"), s.ints("to"), s.flag("align_corners"), s.doubles("scales")};
}

struct ResizeNode : torch::autograd::Function<ResizeNode> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, std::vector<int64_t> size,
                            bool align_corners, std::vector<double> scales) {
    save_resize(ctx, {x.sizes().vec(), size, align_corners, scales});
    return forward_call([&] { return resize(x, size, align_corners, scales); });
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const ResizeArgs a = saved_resize(ctx);  // from: x's shape; to: the output's H, W
    const at::Tensor& gy = grads[0];
    at::Tensor gx = adjoint_call([&] {
      if (!same_hw(a.from, a.to)) return resize_grad(gy, shape_only(gy, a.from), a.align_corners, a.scales);
      const bool identity = a.align_corners || std::all_of(a.scales.begin(), a.scales.end(),
                                                           [](double v) { return v <= 0 || v == 1.0; });
      // Equal sizes: the forward is the identity, or (a scale that moves the samples) its exact adjoint is not the
      // copy that the grad op's same-size rule gives.
      if (identity) return gy.clone();
      return resize_exact_adjoint(gy, shape_only(gy, a.from), a.align_corners, a.scales);
    });
    return {gx, at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

struct ResizeGradNode : torch::autograd::Function<ResizeGradNode> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& grads, const at::Tensor& original_image,
                            bool align_corners, std::vector<double> scales) {
    save_resize(ctx, {grads.sizes().vec(), original_image.sizes().vec(), align_corners, scales});
    return forward_call([&] { return resize_grad(grads, original_image, align_corners, scales); });
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const ResizeArgs a = saved_resize(ctx);  // from: grads' shape; to: original_image's
    const at::Tensor& gy = grads[0];
    at::Tensor gg = adjoint_call([&] {
      if (same_hw(a.from, a.to)) return gy.clone();  // the op is a copy there
      return resize(gy, at::IntArrayRef(a.from).slice(a.from.size() - 2), a.align_corners, a.scales);
    });
    return {gg, at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

// The antialiased pair's nodes keep the forward's sizes and scales, whichever op is the node's forward.
void save_aa(AutogradContext* ctx, std::vector<int64_t> output_size, std::vector<int64_t> input_size,
             bool align_corners, std::optional<double> scales_h, std::optional<double> scales_w) {
  Saved s{ctx};
  s.put("output_size", std::move(output_size));
  s.put("input_size", std::move(input_size));
  s.put("align_corners", align_corners);
  s.put("scales_h", scales_h);
  s.put("scales_w", scales_w);
}

struct AaForwardNode : torch::autograd::Function<AaForwardNode> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, std::vector<int64_t> output_size,
                            bool align_corners, std::optional<double> scales_h, std::optional<double> scales_w) {
    save_aa(ctx, output_size, x.sizes().vec(), align_corners, scales_h, scales_w);
    return forward_call([&] { return aa_forward(x, output_size, align_corners, scales_h, scales_w); });
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    Saved s{ctx};
    at::Tensor gx = adjoint_call([&] {
      return aa_transpose(grads[0], s.ints("output_size"), s.ints("input_size"), s.flag("align_corners"),
                          s.maybe_double("scales_h"), s.maybe_double("scales_w"));
    });
    return {gx, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

struct AaTransposeNode : torch::autograd::Function<AaTransposeNode> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& g, std::vector<int64_t> output_size,
                            std::vector<int64_t> input_size, bool align_corners, std::optional<double> scales_h,
                            std::optional<double> scales_w) {
    save_aa(ctx, output_size, input_size, align_corners, scales_h, scales_w);
    return forward_call(
        [&] { return aa_transpose(g, output_size, input_size, align_corners, scales_h, scales_w); });
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    Saved s{ctx};
    at::Tensor gg = adjoint_call([&] {
      return aa_forward(grads[0], s.ints("output_size"), s.flag("align_corners"), s.maybe_double("scales_h"),
                        s.maybe_double("scales_w"));
    });
    return {gg, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

at::Tensor resize_bicubic_v2_recorded(const at::Tensor& images, std::vector<int64_t> size, bool align_corners,
                                      std::vector<double> scales) {
  return ResizeNode::apply(images, std::move(size), align_corners, std::move(scales));
}

at::Tensor resize_bicubic_v2_grad_recorded(const at::Tensor& grads, const at::Tensor& original_image,
                                           bool align_corners, std::vector<double> scales) {
  return ResizeGradNode::apply(grads, original_image, align_corners, std::move(scales));
}

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
