/* penstock's operator plugin ABI: a shared library of CPU operators that
 * penstock.plugin_manager.load_library(path) registers like built-in ones (fn, ops, the dynamic
 * mode, argument checking, docs). Plain C: build a plugin with any C or C++ compiler, against this
 * header only (nothing to link):
 *
 *     cc -O2 -shared -fPIC -I$(python -c "import penstock.sysconfig as s; print(s.get_include_dir())") \
 *        my_ops.c -o libmy_ops.so
 *
 * The library exports two functions:
 *
 *     int penstock_plugin_abi_version(void);                       // returns PENSTOCK_PLUGIN_ABI_VERSION
 *     int penstock_plugin_operators(const penstock_operator** ops); // points *ops at an array; returns its length
 *
 * Each penstock_operator declares one operator: its name, inputs, outputs and arguments, and two
 * entry points that take a whole batch per call (called without Python's GIL held):
 *   setup: from the inputs and arguments, each output's type, number of dimensions, per-sample
 *          shapes and layout;
 *   run:   fills the outputs, which penstock allocated as setup said.
 * Both return 0 on success; on failure they write a message into ctx->error (a buffer of
 * ctx->error_size bytes), may name the failing sample in ctx->error_sample, and return non-zero:
 * penstock raises RuntimeError naming the operator (and the sample's source file, if any).
 *
 * The declarations must stay valid while the library is loaded (static storage). An operator name
 * is its ops class name ("MyScale", "custom.Scale"): fn's name is the snake_case form
 * ("my_scale", "custom.scale"); a dot places it in a submodule.
 */
#ifndef PENSTOCK_PLUGIN_H_
#define PENSTOCK_PLUGIN_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PENSTOCK_PLUGIN_ABI_VERSION 1
#define PENSTOCK_MAX_DIMS 8

/* Element types: the values of DALIDataType (penstock.types). */
typedef enum penstock_dtype {
  PENSTOCK_UINT8 = 0, PENSTOCK_UINT16 = 1, PENSTOCK_UINT32 = 2, PENSTOCK_UINT64 = 3,
  PENSTOCK_INT8 = 4, PENSTOCK_INT16 = 5, PENSTOCK_INT32 = 6, PENSTOCK_INT64 = 7,
  PENSTOCK_FLOAT16 = 8, PENSTOCK_FLOAT = 9, PENSTOCK_FLOAT64 = 10, PENSTOCK_BOOL = 11
} penstock_dtype;

/* Argument types. Numbers reach the entry points as int64_t (INT, BOOL, INT_LIST) or double
 * (FLOAT, FLOAT_LIST), one value (or list) per sample. */
typedef enum penstock_arg_type {
  PENSTOCK_ARG_INT = 0, PENSTOCK_ARG_FLOAT = 1, PENSTOCK_ARG_BOOL = 2, PENSTOCK_ARG_STR = 3,
  PENSTOCK_ARG_INT_LIST = 4, PENSTOCK_ARG_FLOAT_LIST = 5
} penstock_arg_type;

/* One declared argument. */
typedef struct penstock_arg_decl {
  const char* name;
  int type;                   /* penstock_arg_type */
  const char* default_value;  /* a Python literal ("0.5", "[1, 2]", "'edge'"); NULL: required */
  int per_sample;             /* non-zero: a DataNode may give one value (or list) per sample */
  const char* doc;
} penstock_arg_decl;

/* A batch: one buffer holding every sample, with per-sample shapes and offsets. Samples need not
 * lie back to back (offsets say where each starts). */
typedef struct penstock_batch {
  void* data;              /* the buffer */
  int dtype;               /* penstock_dtype */
  int ndim;                /* dimensions of each sample */
  int64_t num_samples;
  int64_t* shapes;         /* [num_samples][ndim], row by row */
  const int64_t* offsets;  /* [num_samples]: where each sample starts, in elements from data */
  const char* layout;      /* e.g. "HWC"; "" when none */
} penstock_batch;

/* One argument's values for the batch. */
typedef struct penstock_arg {
  const char* name;
  int type;                /* penstock_arg_type */
  int64_t count;           /* values per sample: 1 for scalars, the list's length for lists */
  const int64_t* ints;     /* INT, BOOL, INT_LIST: [num_samples][count]; else NULL */
  const double* floats;    /* FLOAT, FLOAT_LIST: [num_samples][count]; else NULL */
  const char* str;         /* STR: the value; else NULL */
} penstock_arg;

/* What an entry point sees of one call. */
typedef struct penstock_context {
  int64_t num_samples;
  int num_inputs;
  const penstock_batch* inputs;
  int num_args;
  const penstock_arg* args;     /* every declared argument, in declaration order */
  /* Runs body(user, i) for i in [0, n) on the pipeline's threads (the caller's thread takes part)
   * and returns when all are done. */
  void (*parallel_for)(void* pool, int64_t n, void (*body)(void* user, int64_t i), void* user);
  void* pool;
  char* error;                  /* a failing entry point writes its message here */
  int64_t error_size;
  int64_t error_sample;         /* and the failing sample here (-1 on entry: the whole batch) */
} penstock_context;

/* setup: for each output, set dtype, ndim (<= PENSTOCK_MAX_DIMS), shapes ([num_samples][ndim]
 * into the array there, which holds num_samples * PENSTOCK_MAX_DIMS values) and, if wanted,
 * layout (static storage; on entry input 0's layout, or ""). On entry each output has input 0's
 * dtype, ndim and shapes (a scalar per sample when there are no inputs). */
typedef int (*penstock_setup_fn)(penstock_context* ctx, penstock_batch* outputs);
/* run: fill outputs[0 .. num_outputs), allocated as setup said (packed). */
typedef int (*penstock_run_fn)(penstock_context* ctx, penstock_batch* outputs);

typedef struct penstock_operator {
  const char* name;
  const char* doc;
  int min_inputs;
  int max_inputs;
  int num_outputs;
  int num_args;
  const penstock_arg_decl* args;
  penstock_setup_fn setup;      /* NULL: outputs like input 0 */
  penstock_run_fn run_cpu;
} penstock_operator;

typedef int (*penstock_plugin_abi_version_fn)(void);
typedef int (*penstock_plugin_operators_fn)(const penstock_operator** ops);

#ifdef __cplusplus
}
#endif

#endif /* PENSTOCK_PLUGIN_H_ */
