"""An operator declared in Python with both kernels: ``fn.example.scale_shift(x, scale, shift)`` =
x * scale + shift over float32 samples, ``scale`` per sample if wanted. The CPU kernel is C++ (the
C ABI's run entry point, compiled at first use by the system's compiler), the GPU kernel CUDA
(compiled at run time through NVRTC); each takes the whole batch per call."""
from __future__ import annotations

from typing import Callable

import penstock.custom as custom
from penstock import types

CPU = r"""
#include <cstdio>

namespace {
struct Job {
  const penstock_batch* in;
  penstock_batch* out;
  const double* scale;
  const double* shift;
};

void one_sample(void* user, int64_t s) {
  const Job& job = *static_cast<const Job*>(user);
  int64_t volume = 1;
  for (int d = 0; d < job.in->ndim; ++d) volume *= job.in->shapes[s * job.in->ndim + d];
  const float* x = static_cast<const float*>(job.in->data) + job.in->offsets[s];
  float* y = static_cast<float*>(job.out->data) + job.out->offsets[s];
  const float scale = float(job.scale[s]), shift = float(job.shift[s]);
  for (int64_t i = 0; i < volume; ++i) y[i] = x[i] * scale + shift;
}
}  // namespace

extern "C" int run(penstock_context* ctx, penstock_batch* outputs) {
  Job job{&ctx->inputs[0], &outputs[0], ctx->args[0].floats, ctx->args[1].floats};
  ctx->parallel_for(ctx->pool, ctx->num_samples, one_sample, &job);
  return 0;
}
"""

GPU = r"""
extern "C" __global__ void run(const penstock::Call* call) {
  const int s = blockIdx.y;
  const penstock::Sample& in = call->input(0, s);
  const float* x = in.as<float>();
  float* y = call->output(0, s).as<float>();
  const float scale = float(call->arg(0, s)), shift = float(call->arg(1, s));
  PENSTOCK_FOR_EACH_ELEMENT(i, in.volume) y[i] = __fmul_rn(x[i], scale) + shift;  // no fused multiply-add: as the CPU
}
"""


def declare(replace: bool = False) -> Callable:
    """Declares example.ScaleShift (fn.example.scale_shift, ops.example.ScaleShift) and returns its fn function."""
    return custom.operator(
        "example.ScaleShift", doc="x * scale + shift over float32 samples.",
        args=[custom.Argument("scale", "float", 1.0, per_sample=True, doc="multiplier, per sample if given so"),
              custom.Argument("shift", "float", 0.0, doc="added after scaling")],
        input_types=[types.FLOAT], cpu=CPU, gpu=GPU, replace=replace)
