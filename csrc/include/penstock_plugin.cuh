// What the GPU kernel of an operator declared in Python (penstock.custom.operator(gpu=...)) sees.
// penstock compiles the kernel's CUDA source at run time (NVRTC, through CuPy; cached on disk) with
// this header in front of it, and launches it once per batch on the pipeline's stream:
//
//     extern "C" __global__ void run(const penstock::Call* call);
//
// with a grid of (blocks, num_samples) blocks of `threads` threads (the operator's gpu_blocks and
// gpu_threads; by default enough blocks of 256 threads for the largest sample, at most 1024):
// blockIdx.y is the sample, and a sample's elements are shared by its blockIdx.x blocks
// (PENSTOCK_FOR_EACH_ELEMENT).
#pragma once

namespace penstock {

constexpr int kMaxDims = 8;

// One sample of an input or output: its memory, shape and number of elements.
struct Sample {
  void* data;
  long long shape[kMaxDims];  // the first ndim extents
  long long volume;
  long long ndim;

  template <typename T>
  __device__ T* as() const { return static_cast<T*>(data); }
};

// One launch: every sample of every input and output, and the arguments' per-sample values.
struct Call {
  long long num_samples, num_inputs, num_outputs, num_args;
  const Sample* inputs;        // [num_inputs][num_samples]
  const Sample* outputs;       // [num_outputs][num_samples]
  const double* arg_values;    // the numeric arguments, in declaration order
  const long long* arg_start;  // [num_args]: where argument a's values start in arg_values
  const long long* arg_count;  // [num_args]: values per sample (1; a list's length; 0 when not given)

  __device__ const Sample& input(int i, int sample) const { return inputs[i * num_samples + sample]; }
  __device__ const Sample& output(int o, int sample) const { return outputs[o * num_samples + sample]; }
  // Value k of argument a (in declaration order, string arguments included) for a sample.
  __device__ double arg(int a, int sample, int k = 0) const {
    return arg_values[arg_start[a] + sample * arg_count[a] + k];
  }
};

}  // namespace penstock

// Loops `i` over [0, volume) shared by the blocks of one sample (blockIdx.y).
#define PENSTOCK_FOR_EACH_ELEMENT(i, volume)                                                      \
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (long long)(volume); \
       i += (long long)gridDim.x * blockDim.x)
