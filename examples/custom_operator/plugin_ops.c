/* Two CPU operators in a plugin library built against penstock's C ABI (penstock_plugin.h):
 *
 *   example.Threshold  (fn.example.threshold): x >= threshold ? values[1] : values[0], per element,
 *                      for uint8 and float input; the output is like the input (no setup).
 *   example.Histogram  (fn.example.histogram): counts of a uint8 sample's values in `bins` equal
 *                      bins over [0, 256); setup makes the output int64 of shape [bins].
 *
 * Build:  cc -O2 -shared -fPIC $(python -c "import penstock.sysconfig as s; print(*s.get_compile_flags())") \
 *            plugin_ops.c -o libexample_ops.so
 */
#include <stdio.h>
#include <string.h>

#include "penstock_plugin.h"

/* ---- example.Threshold ---- */

typedef struct {
  const penstock_batch* in;
  penstock_batch* out;
  const double* thresholds;  /* one per sample */
  const double* values;      /* two per sample: below, at or above */
} threshold_job;

static void threshold_sample(void* user, int64_t s) {
  const threshold_job* job = (const threshold_job*)user;
  int64_t volume = 1;
  for (int d = 0; d < job->in->ndim; ++d) volume *= job->in->shapes[s * job->in->ndim + d];
  double t = job->thresholds[s], lo = job->values[2 * s], hi = job->values[2 * s + 1];
  if (job->in->dtype == PENSTOCK_UINT8) {
    const uint8_t* x = (const uint8_t*)job->in->data + job->in->offsets[s];
    uint8_t* y = (uint8_t*)job->out->data + job->out->offsets[s];
    for (int64_t i = 0; i < volume; ++i) y[i] = (uint8_t)(x[i] >= t ? hi : lo);
  } else {
    const float* x = (const float*)job->in->data + job->in->offsets[s];
    float* y = (float*)job->out->data + job->out->offsets[s];
    for (int64_t i = 0; i < volume; ++i) y[i] = (float)(x[i] >= t ? hi : lo);
  }
}

static int threshold_run(penstock_context* ctx, penstock_batch* outputs) {
  const penstock_batch* in = &ctx->inputs[0];
  if (in->dtype != PENSTOCK_UINT8 && in->dtype != PENSTOCK_FLOAT) {
    snprintf(ctx->error, (size_t)ctx->error_size, "input type %d is not uint8 or float", in->dtype);
    return 1;
  }
  if (ctx->args[1].count != 2) {
    snprintf(ctx->error, (size_t)ctx->error_size, "values needs 2 numbers per sample, got %lld",
             (long long)ctx->args[1].count);
    return 1;
  }
  threshold_job job = {in, &outputs[0], ctx->args[0].floats, ctx->args[1].floats};
  ctx->parallel_for(ctx->pool, ctx->num_samples, threshold_sample, &job);
  return 0;
}

static const penstock_arg_decl threshold_args[] = {
    {"threshold", PENSTOCK_ARG_FLOAT, "128", 1, "values at or above it become values[1]"},
    {"values", PENSTOCK_ARG_FLOAT_LIST, "[0, 255]", 0, "the outputs below and at or above the threshold"},
};

/* ---- example.Histogram ---- */

static int histogram_setup(penstock_context* ctx, penstock_batch* outputs) {
  const int64_t* bins = ctx->args[0].ints;
  if (ctx->inputs[0].dtype != PENSTOCK_UINT8) {
    snprintf(ctx->error, (size_t)ctx->error_size, "input type %d is not uint8", ctx->inputs[0].dtype);
    return 1;
  }
  outputs[0].dtype = PENSTOCK_INT64;
  outputs[0].ndim = 1;
  outputs[0].layout = "";
  for (int64_t s = 0; s < ctx->num_samples; ++s) {
    if (bins[s] < 1 || bins[s] > 256) {
      snprintf(ctx->error, (size_t)ctx->error_size, "bins must be in [1, 256], got %lld", (long long)bins[s]);
      ctx->error_sample = s;
      return 1;
    }
    outputs[0].shapes[s] = bins[s];
  }
  return 0;
}

typedef struct {
  const penstock_batch* in;
  penstock_batch* out;
} histogram_job;

static void histogram_sample(void* user, int64_t s) {
  const histogram_job* job = (const histogram_job*)user;
  int64_t volume = 1;
  for (int d = 0; d < job->in->ndim; ++d) volume *= job->in->shapes[s * job->in->ndim + d];
  int64_t bins = job->out->shapes[s];
  const uint8_t* x = (const uint8_t*)job->in->data + job->in->offsets[s];
  int64_t* counts = (int64_t*)job->out->data + job->out->offsets[s];
  memset(counts, 0, (size_t)bins * sizeof(int64_t));
  for (int64_t i = 0; i < volume; ++i) counts[x[i] * bins / 256]++;
}

static int histogram_run(penstock_context* ctx, penstock_batch* outputs) {
  histogram_job job = {&ctx->inputs[0], &outputs[0]};
  ctx->parallel_for(ctx->pool, ctx->num_samples, histogram_sample, &job);
  return 0;
}

static const penstock_arg_decl histogram_args[] = {
    {"bins", PENSTOCK_ARG_INT, "256", 1, "number of equal bins over [0, 256)"},
};

/* ---- the library's declarations ---- */

static const penstock_operator operators[] = {
    {"example.Threshold", "Each element set to values[1] if at or above threshold, else values[0].",
     1, 1, 1, 2, threshold_args, NULL, threshold_run},
    {"example.Histogram", "Counts of a uint8 sample's values in equal bins over [0, 256).",
     1, 1, 1, 1, histogram_args, histogram_setup, histogram_run},
};

int penstock_plugin_abi_version(void) { return PENSTOCK_PLUGIN_ABI_VERSION; }

int penstock_plugin_operators(const penstock_operator** ops) {
  *ops = operators;
  return (int)(sizeof(operators) / sizeof(operators[0]));
}
