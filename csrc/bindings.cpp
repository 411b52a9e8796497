// The extension module penstock._engine: every kernel's entry point bound for Python. The only unit
// that includes pybind11 (its headers cost each unit that includes them seconds of compile time):
// kernels take and return penstock::Array (engine/kernel.h), which the casters below convert from
// and to numpy arrays without copying, and run with the GIL released.
#include <mutex>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "codec/cuda_driver.h"
#include "codec/dlpack_export.h"
#include "codec/nvimgcodec.h"
#include "codec/stream_queue.h"
#include "engine/background.h"
#include "engine/batch_shapes.h"
#include "engine/buffer_pool.h"
#include "engine/kernel.h"
#include "engine/packed_parts.h"
#include "engine/sample_order.h"
#include "engine/thread_state.h"
#include "kernels/audio_decode.h"
#include "kernels/audio_features.h"
#include "kernels/boxes.h"
#include "kernels/clahe.h"
#include "kernels/color.h"
#include "kernels/crop_mirror_normalize.h"
#include "kernels/image_decode_split.h"
#include "kernels/image_decode_windows.h"
#include "kernels/custom.h"
#include "kernels/debayer.h"
#include "kernels/displacement.h"
#include "kernels/dump_image.h"
#include "kernels/elementwise.h"
#include "kernels/file_io.h"
#include "kernels/file_ranges.h"
#include "kernels/filter.h"
#include "kernels/gather.h"
#include "kernels/gaussian_blur.h"
#include "kernels/inflate.h"
#include "kernels/image_decode.h"
#include "kernels/image_decode_libraries.h"
#include "kernels/jpeg_compression_distortion.h"
#include "kernels/layout.h"
#include "kernels/noise.h"
#include "kernels/normalize.h"
#include "kernels/occlusion.h"
#include "kernels/paste.h"
#include "kernels/point_ops.h"
#include "kernels/readers_caffe.h"
#include "kernels/readers_coco.h"
#include "kernels/readers_mxnet.h"
#include "kernels/readers_numpy.h"
#include "kernels/readers_tfrecord.h"
#include "kernels/reductions.h"
#include "kernels/resize.h"
#include "kernels/segmentation.h"
#include "kernels/slice.h"
#include "kernels/tensor_creation.h"
#include "kernels/video.h"
#include "kernels/warp.h"
#include "kernels/warp_perspective.h"

namespace py = pybind11;

namespace penstock {
namespace {

// References to numpy arrays whose last view went away in a thread without the GIL. A kernel's
// array arguments are its own copies, dropped as it returns, still without the GIL: taking it back
// there (and giving it away again) costs a thread that runs Python beside the pipeline one more
// switch per argument. They are dropped by the next conversion of an array, which holds the GIL.
std::mutex orphans_mutex;
std::vector<PyObject*> orphans;

void drop_orphans() {
  std::vector<PyObject*> dropped;
  {
    std::lock_guard<std::mutex> lock(orphans_mutex);
    if (orphans.empty()) return;
    dropped.swap(orphans);
  }
  for (PyObject* object : dropped) Py_DECREF(object);
}

// Drops a reference: at once with the GIL held, else at the next array conversion (a consumer frees
// a DLPack view on any thread, the autograd engine's among them, and taking the GIL there would
// make that thread wait for the pipeline's and the training loop's Python).
void drop_reference(void* object) {
  if (!Py_IsInitialized()) return;  // freed after the interpreter's end: nothing left to drop
  if (PyGILState_Check()) {
    Py_DECREF(static_cast<PyObject*>(object));
    return;
  }
  std::lock_guard<std::mutex> lock(orphans_mutex);
  orphans.push_back(static_cast<PyObject*>(object));
}

// A view of a numpy array that holds a reference to it: dropped at once where the last copy of the
// view goes with the GIL held, else by the next array conversion (drop_orphans).
Array view_of(const py::array& a) {
  drop_orphans();
  std::shared_ptr<void> owner(a.inc_ref().ptr(), drop_reference);
  return Array(const_cast<void*>(a.data()), a.dtype().kind(), a.itemsize(),
               std::vector<int64_t>(a.shape(), a.shape() + a.ndim()), (a.flags() & py::array::c_style) != 0,
               a.writeable(), std::move(owner));
}

// A "dltensor" capsule no consumer took (one that did renamed it and calls the deleter itself).
void destroy_unconsumed_view(PyObject* capsule) {
  if (!PyCapsule_IsValid(capsule, "dltensor")) return;
  auto* managed = static_cast<codec::DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
  managed->deleter(managed);
}

// The bit generator behind a numpy BitGenerator's capsule (`what` names the caller in the error).
NumpyBitGenerator& bit_generator_of(const py::capsule& capsule, const char* what) {
  if (std::string_view(capsule.name() ? capsule.name() : "") != "BitGenerator")
    throw py::type_error(std::string(what) + ": expected a numpy BitGenerator's capsule");
  return *capsule.get_pointer<NumpyBitGenerator>();
}

// A numpy array over an Array's memory, which it keeps alive.
py::array numpy_of(const Array& a) {
  drop_orphans();
  if (!a.c_contiguous()) throw std::logic_error("a kernel returned an array that is not C-contiguous");
  auto* keep = new std::shared_ptr<void>(a.owner());
  py::capsule base(keep, [](void* p) { delete static_cast<std::shared_ptr<void>*>(p); });
  return py::array(py::dtype(std::string(1, a.kind()) + std::to_string(a.itemsize())), a.shape(), a.data(), base);
}


// Element-wise work this small keeps the GIL and runs on the calling thread: a call of microseconds
// that gave the GIL away made its thread wait up to Python's switch interval to take it back while
// another thread ran Python (a training loop), and a batch of per-sample scalars (an auto-augment
// policy's magnitudes, a conditional's split) makes dozens of such calls a batch.
constexpr int64_t kInlineBytes = int64_t(64) << 10;

bool small_work(const Array& out) { return out.nbytes() <= kInlineBytes; }

// A pool of the calling thread alone (no workers), for the small work above.
ThreadPool& calling_thread() {
  thread_local ThreadPool pool(1);
  return pool;
}

// Kernel(pool, args...) with the GIL held on the calling thread when its output (argument Output of
// args) is small, else with the GIL released on `pool`.
template <auto Kernel, size_t Output, typename... Args>
void sized_call(ThreadPool& pool, Args... args) {
  static_assert(std::is_same_v<std::tuple_element_t<Output, std::tuple<Args...>>, Array>,
                "sized: argument Output of the kernel must be its output buffer (an Array)");
  if (small_work(std::get<Output>(std::tie(args...)))) return Kernel(calling_thread(), args...);
  py::gil_scoped_release release;
  Kernel(pool, args...);
}

// The binding of Kernel, a kernel of signature (ThreadPool&, Args...), by the size of its output:
// m.def("name", sized<&kernel, output>(&kernel), ...).
template <auto Kernel, size_t Output, typename... Args>
constexpr auto sized(void (*)(ThreadPool&, Args...)) {
  return &sized_call<Kernel, Output, Args...>;
}

// Runs `call` (a driver call) with the GIL released when `release` says so, else holding it.
template <typename Call>
void without_gil_if(bool release, Call&& call) {
  if (release) {
    py::gil_scoped_release released;
    call();
  } else {
    call();
  }
}

// A CodecMemory's counts as a dict
py::dict memory_counts(const codec::CodecMemory::Counts& counts) {
  return py::dict(py::arg("blocks") = counts.blocks, py::arg("bytes") = counts.bytes,
                  py::arg("reused") = counts.reused);
}

}  // namespace
}  // namespace penstock

namespace pybind11::detail {

// Array <- any numpy array, as it is (as py::array takes it).
template <>
struct type_caster<penstock::Array> {
  PYBIND11_TYPE_CASTER(penstock::Array, const_name("numpy.ndarray"));
  bool load(handle src, bool) {
    if (!isinstance<array>(src)) return false;
    value = penstock::view_of(reinterpret_borrow<array>(src));
    return true;
  }
  static handle cast(const penstock::Array& a, return_value_policy, handle) { return penstock::numpy_of(a).release(); }
};

// ArrayOf<T> <- what numpy converts to a C-contiguous array of T (as py::array_t<T, c_style> takes it).
template <typename T, bool ForceCast>
struct type_caster<penstock::ArrayOf<T, ForceCast>> {
  using Value = penstock::ArrayOf<T, ForceCast>;
  using Numpy = array_t<T, array::c_style | (ForceCast ? array::forcecast : 0)>;
  PYBIND11_TYPE_CASTER(Value, const_name("numpy.ndarray[") + npy_format_descriptor<T>::name + const_name("]"));
  bool load(handle src, bool convert) {
    if (!convert && !Numpy::check_(src)) return false;
    Numpy converted = Numpy::ensure(src);
    if (!converted) return false;
    value = Value(penstock::view_of(converted));
    return true;
  }
  static handle cast(const Value& a, return_value_policy, handle) { return penstock::numpy_of(a).release(); }
};

// ArrayTuple -> a tuple of numpy arrays.
template <>
struct type_caster<penstock::ArrayTuple> {
  PYBIND11_TYPE_CASTER(penstock::ArrayTuple, const_name("tuple[numpy.ndarray, ...]"));
  bool load(handle, bool) { return false; }
  static handle cast(const penstock::ArrayTuple& arrays, return_value_policy, handle) {
    tuple out(arrays.size());
    for (size_t i = 0; i < arrays.size(); ++i) out[i] = penstock::numpy_of(arrays[i]);
    return out.release();
  }
};

}  // namespace pybind11::detail

PYBIND11_MODULE(_engine, m) {
  using namespace penstock;
  using namespace pybind11::literals;
  const py::call_guard<py::gil_scoped_release> without_gil;
  m.doc() = "penstock native engine: thread pool and batch kernels";

  if (std::string problem = interposed_image_library(); !problem.empty()) throw py::import_error(problem);

  // shared: a task in the background (Background) keeps the pool it decodes with
  py::class_<ThreadPool, std::shared_ptr<ThreadPool>>(m, "ThreadPool")
      .def(py::init<int, const std::string&, int>(), "num_threads"_a, "name"_a = "", "niceness"_a = 0,
           "`num_threads`-way parallelism: the calling thread and num_threads - 1 workers, named `name` as the "
           "OS shows them (at most 15 characters kept) when given, their CPU priority `niceness` steps lower "
           "(Linux's nice scale) when above 0")
      .def_property_readonly("num_threads", &ThreadPool::num_threads);
  static py::exception<SampleError> sample_error(m, "SampleError", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const SampleError& e) {
      py::object args = py::make_tuple(py::str(e.what()), e.sample);
      PyErr_SetObject(sample_error.ptr(), args.ptr());
    }
  });

  // ---- readers: the order samples are handed out in (engine/sample_order.h); the GIL stays held ----
  py::class_<SampleOrder>(m, "SampleOrder",
                          "The order one reader shard hands its samples out in: its read order and shuffle buffer")
      .def(py::init<int64_t, int64_t, int64_t, bool, std::vector<int64_t>, std::optional<uint32_t>, int64_t,
                    uint64_t, bool>(),
           "n"_a, "num_shards"_a, "shard_id"_a, "stick"_a, "order"_a, "reshuffle_seed"_a, "fill"_a, "rng_state"_a,
           "pad"_a)
      .def("next_batch", &SampleOrder::next_batch, "The next `batch` sample indices", "batch"_a)
      .def("start_with", &SampleOrder::start_with, "indices"_a, "pass_index"_a, "pad_to"_a)
      .def("set_order", &SampleOrder::set_order, "order"_a)
      .def_readonly("n", &SampleOrder::n)
      .def_readonly("fill", &SampleOrder::fill)
      .def_readonly("order", &SampleOrder::order)
      .def_readonly("order_version", &SampleOrder::order_version)
      .def_readwrite("shard", &SampleOrder::shard)
      .def_readwrite("pass_shard", &SampleOrder::pass_shard)
      .def_readwrite("pos", &SampleOrder::pos)
      .def_readwrite("read_in_pass", &SampleOrder::read_in_pass)
      .def_readwrite("epoch", &SampleOrder::epoch)
      .def_readwrite("buffer", &SampleOrder::buffer)
      .def_readwrite("passes", &SampleOrder::passes)
      .def_readwrite("rng_state", &SampleOrder::rng_state)
      .def_readwrite("returned", &SampleOrder::returned)
      .def_readwrite("last", &SampleOrder::last)
      .def_readwrite("pass_index", &SampleOrder::pass_index)
      .def_readwrite("prelude", &SampleOrder::prelude)
      .def_readwrite("prelude_pos", &SampleOrder::prelude_pos)
      .def_readwrite("prelude_pad_to", &SampleOrder::prelude_pad_to);
  m.def("std_shuffle", [](std::vector<int64_t> items, uint32_t seed) {
        std_shuffle(items, seed);
        return items;
      }, "std::shuffle(items, std::mt19937(seed)) as libstdc++ does it (DALI's list orders)", "items"_a, "seed"_a);
  m.def("minstd_below", [](uint64_t state, int64_t k) {
        const int64_t value = minstd_below(state, k);
        return std::make_pair(value, state);
      }, "uniform_int_distribution<int>(0, k - 1) over minstd_rand0 in `state`, as libstdc++ draws it: "
      "(the value, the engine's next state)", "state"_a, "k"_a);

  // ---- a batch's volumes and packed offsets (engine/batch_shapes.h): the GIL stays held ----
  m.def("shape_volumes", &shape_volumes, "The product of each row of shapes [N, D] (1 when D is 0)", "shapes"_a);
  m.def("zero_table", &zero_table, "A writable int64 table [rows, width] of zeros (the GIL stays held)", "rows"_a,
        "width"_a);
  m.def("packed_offsets", &packed_offsets, "Where each sample of shapes [N, D] starts when packed back to back",
        "shapes"_a);
  m.def("with_columns", &with_columns,
        "A copy of table [N, M] with columns [first, first + K) set from columns [values_first, values_first + K) "
        "of values [V] (every row alike) or [N, V]; K: count, or the rest of V when negative",
        "table"_a, "first"_a, "values"_a, "values_first"_a = 0, "count"_a = -1);
  m.def("places_in_blocks", &places_in_blocks,
        "Samples of shapes [N, D] (one-byte elements) back to back in blocks of block_bytes, a sample that does "
        "not fit a block's rest starting the next: per sample (block, byte offset, bytes) [N, 3], and each "
        "block's bytes used [B]",
        "shapes"_a, "block_bytes"_a);
  m.def("pack_parts", &pack_parts,
        "The bytes of several contiguous arrays in one uint8 array, each from a multiple of `alignment` (gaps "
        "zeroed), and each one's byte offset (the GIL stays held)",
        "parts"_a, "alignment"_a = 16);
  m.def("take_rows", &take_rows, "Rows `rows` [M] of table [N, ...] (table[rows])", "table"_a, "rows"_a);
  m.def("put_rows", &put_rows, "A copy of table [N, ...] with rows `rows` [M] set from values [M, ...] "
        "(table[rows] = values)", "table"_a, "rows"_a, "values"_a);
  m.def("first_differing_row", &first_differing_row, "The first row where a and b (alike) differ, or -1", "a"_a,
        "b"_a);
  m.def("whole_regions", &whole_regions,
        "Regions [N, 2K] (starts, then ends; float64) covering columns [first, first + K) of shapes whole",
        "shapes"_a, "first"_a, "count"_a);
  m.def("outer_spatial_channels", &outer_spatial_channels,
        "Shapes [N, count + 2] (outer, spatial..., channels) of shapes [N, D] with spatial dims [first, first + "
        "count): the dims before multiplied into the outer extent, those after into the channels",
        "shapes"_a, "first"_a, "count"_a);
  m.def("window_regions", &window_regions,
        "Regions [N, 2K] (starts, then ends; float64) of windows [N, 2K] (anchors, then sizes)", "windows"_a);
  m.def("image_planes", &image_planes,
        "The (H, W, C) image planes (frames, channels of channel-first images) of a batch: each one's sample, "
        "shape [M, 3] and first element in the batch and in one of the same shapes at out_offsets, from the "
        "columns of the F, C, H, W axes (-1: absent)",
        "shapes"_a, "offsets"_a, "out_offsets"_a, "frame"_a, "channel"_a, "height"_a, "width"_a);
  m.def("first_window_outside", &first_window_outside,
        "The first sample whose window (anchors, windows [N, D]) reaches outside its shape, or -1", "shapes"_a,
        "anchors"_a, "windows"_a);
  m.def("first_window_outside_image", &first_window_outside_image,
        "The first image whose window (y, x, h, w: windows [N, 4]) is empty or reaches outside it (H, W, ...: "
        "shapes [N, 2 or more]), or -1",
        "windows"_a, "shapes"_a);

  // ---- the consumer's turn (core/penstock/_consumer.py) ----
  m.def("watch_consumer", &watch_consumer,
        "Watches the calling thread as the consumer; the address of its Python thread state");
  m.def("unwatch_consumer", &unwatch_consumer, "Stops watching the thread of this thread state, if it is watched",
        "state"_a);
  m.def("consumer_holds_gil", &consumer_holds_gil,
        "1 when the watched consumer holds the GIL, 0 when not, -1 when no thread is watched", without_gil);
  m.def("wait_while_consumer_runs_python", &wait_while_consumer_runs_python,
        "Sleeps `poll_us` at a time while the watched consumer is seen holding the GIL within `look_us` after each "
        "sleep, at most `max_us` in all: the microseconds waited", without_gil, "max_us"_a, "poll_us"_a, "look_us"_a);

  // ---- host memory ----
  m.def("empty_pooled", [](int64_t nbytes) { return Array::empty('u', 1, {nbytes}, true); },
        "An uninitialized uint8 array from the host buffer pool; its memory returns to the pool "
        "when the array (and every view of it) is freed", "nbytes"_a);
  m.def("pool_cached_bytes", [] { return host_pool()->cached_bytes(); }, "Bytes held by the host buffer pool for reuse");
  m.def("pool_clear", [] { host_pool()->clear(); }, "Frees every cached buffer");

  // ---- work queued on a CUDA stream: the GIL released only where the caller asks (stream_queue.h says why) ----
  m.def(
      "launch_kernel",
      [](uintptr_t function, std::array<unsigned, 3> grid, std::array<unsigned, 3> block, unsigned shared_bytes,
         uintptr_t stream, const py::bytes& params, const std::vector<size_t>& offsets, bool release_gil) {
        std::string_view bytes = params;
        for (size_t offset : offsets)
          if (offset >= bytes.size()) throw std::invalid_argument("launch_kernel: a parameter offset is out of range");
        without_gil_if(release_gil, [&] {
          codec::launch_kernel(function, grid, block, shared_bytes, stream,
                               reinterpret_cast<const uint8_t*>(bytes.data()), offsets);
        });
      },
      "Launch a kernel (CUfunction) on a stream; `params` holds each parameter's bytes at its offset; the GIL "
      "is released for the driver's call with `release_gil`",
      "function"_a, "grid"_a, "block"_a, "shared_bytes"_a, "stream"_a, "params"_a, "offsets"_a,
      "release_gil"_a = false);
  m.def(
      "launch_kernels",
      [](ArrayOf<uint64_t> functions, I64Array grids, unsigned block, uintptr_t stream, I64Array slots,
         bool release_gil) {
        const size_t launches = functions.size();
        if (grids.size() != int64_t(launches) || slots.ndim() != 2 || slots.shape(0) != int64_t(launches))
          throw std::invalid_argument("launch_kernels: functions, grids and slots [launches, parameters] disagree");
        without_gil_if(release_gil, [&] {
          codec::launch_kernels(reinterpret_cast<const uintptr_t*>(functions.data()), grids.data(), launches, block,
                                stream, slots.data(), size_t(slots.shape(1)));
        });
      },
      "Launch kernels (CUfunctions) in order on a stream, one row of 8-byte parameter slots each; the GIL is "
      "released for the driver's calls with `release_gil`",
      "functions"_a, "grids"_a, "block"_a, "stream"_a, "slots"_a, "release_gil"_a = false);
  m.def(
      "record_event",
      [](uintptr_t event, uintptr_t stream, bool release_gil) {
        without_gil_if(release_gil, [&] { codec::record_event(event, stream); });
      },
      "Record an event (CUevent) after the work queued on a stream; the GIL is released for the driver's call "
      "with `release_gil`",
      "event"_a, "stream"_a, "release_gil"_a = false);
  m.def(
      "wait_event",
      [](uintptr_t stream, uintptr_t event, bool release_gil) {
        without_gil_if(release_gil, [&] { codec::wait_event(stream, event); });
      },
      "Make a stream wait for an event (CUevent); the GIL is released for the driver's call with `release_gil`",
      "stream"_a, "event"_a, "release_gil"_a = false);
  m.def("wait_for_stream", &codec::wait_for_stream, "Make stream `waiting` wait for the work queued on `producer`",
        "waiting"_a, "producer"_a);
  m.def("stream_priority_range", &codec::stream_priority_range,
        "GPU `device_id`'s stream priorities (least, greatest); a greater priority is a smaller number",
        "device_id"_a);
  m.def(
      "dlpack_view",
      [](const py::object& owner, uintptr_t data, std::vector<int64_t> shape, std::vector<int64_t> strides,
         uint8_t code, uint8_t bits, int32_t device_type, int32_t device_id, int64_t consumer, uintptr_t event,
         uintptr_t producer) {
        drop_orphans();
        codec::ExportRequest request;
        request.data = data;
        request.shape = std::move(shape);
        request.strides = std::move(strides);
        request.dtype = codec::DLDataType{code, bits, 1};
        request.device = codec::DLDevice{device_type, device_id};
        request.consumer = consumer;
        request.event = event;
        request.producer = producer;
        request.release_owner = drop_reference;
        request.owner = owner.inc_ref().ptr();
        codec::DLManagedTensor* managed;
        try {
          managed = codec::export_view(std::move(request));
        } catch (...) {
          owner.dec_ref();
          throw;
        }
        PyObject* capsule = PyCapsule_New(managed, "dltensor", destroy_unconsumed_view);
        if (!capsule) {
          managed->deleter(managed);
          throw py::error_already_set();
        }
        return py::reinterpret_steal<py::object>(capsule);
      },
      "A DLPack capsule viewing `data` (shape, strides in elements, DLPack type code and bits, device) and "
      "keeping `owner` until its consumer frees it; for a CUDA view, the `consumer` stream (DLPack's number: "
      "1 the legacy default stream, -1 no ordering) first waits for `event` or, without one, for the work "
      "queued on `producer`; a producer stream lending to a default stream gets the owner back (its memory "
      "for the pool) only once the consumer's work queued before the view was freed has passed",
      "owner"_a, "data"_a, "shape"_a, "strides"_a, "code"_a, "bits"_a, "device_type"_a, "device_id"_a,
      "consumer"_a = -1, "event"_a = 0, "producer"_a = 0);
  m.def(
      "release_passed_owners",
      [](bool wait) {
        size_t passed = codec::release_passed_owners(wait);
        drop_orphans();  // owners let go of earlier by threads without the GIL
        return passed;
      },
      "Let go of the owners of freed views whose consumers' work has passed (all, waiting for the GPU, if "
      "`wait`); returns how many",
      "wait"_a = false);
  m.def(
      "copy_to_device",
      [](uintptr_t dst, const py::buffer& src, uintptr_t staging, uintptr_t stream, size_t release_gil_from) {
        py::buffer_info info = src.request();
        if (!PyBuffer_IsContiguous(info.view(), 'C'))
          throw std::invalid_argument("copy_to_device: the host data is not contiguous");
        size_t nbytes = static_cast<size_t>(info.size) * static_cast<size_t>(info.itemsize);
        if (nbytes >= release_gil_from) {  // a copy long enough for other threads to run meanwhile
          py::gil_scoped_release released;
          codec::copy_to_device(dst, info.ptr, nbytes, staging, stream);
        } else {
          codec::copy_to_device(dst, info.ptr, nbytes, staging, stream);
        }
      },
      "Copy host data through the pinned block `staging` to device memory `dst`, queued on `stream`; the GIL "
      "is released only for copies of `release_gil_from` bytes or more",
      "dst"_a, "src"_a, "staging"_a, "stream"_a, "release_gil_from"_a);
  m.def(
      "copy_ranges_to_device",
      [](const py::array_t<uint64_t, py::array::c_style>& dsts, uintptr_t staging, size_t staging_bytes,
         const py::array_t<int64_t, py::array::c_style>& offsets, const py::array_t<int64_t, py::array::c_style>& sizes,
         uintptr_t stream) {
        size_t count = size_t(dsts.size());
        if (size_t(offsets.size()) != count || size_t(sizes.size()) != count)
          throw std::invalid_argument("copy_ranges_to_device: dsts, offsets and sizes differ in length");
        const uint64_t* d = dsts.data();
        const int64_t* o = offsets.data();
        const int64_t* n = sizes.data();
        py::gil_scoped_release released;
        codec::copy_ranges_to_device(d, staging, staging_bytes, o, n, count, stream);
      },
      "Queue on `stream` the copies of ranges of the pinned block `staging` (`staging_bytes` long): range i, "
      "`sizes[i]` bytes at `offsets[i]`, to device address `dsts[i]`; one call for a batch's samples",
      "dsts"_a, "staging"_a, "staging_bytes"_a, "offsets"_a, "sizes"_a, "stream"_a);

  // ---- custom operators (include/penstock_plugin.h) ----
  m.def("plugin_parallel_for_address", &plugin_parallel_for_address,
        "Address of the parallel_for a plugin's entry points call (penstock_context::parallel_for)");
  m.def("thread_pool_address", &thread_pool_address, "The pool as penstock_context::pool", "pool"_a);

  // ---- files and readers ----
  m.def("read_files", &read_files, "Read whole files into one packed uint8 buffer", without_gil, "pool"_a, "paths"_a);
  m.def("read_file_ranges", &read_file_ranges, "Read byte ranges of files into one packed buffer", without_gil,
        "pool"_a, "paths"_a, "offsets"_a, "sizes"_a);
  m.def("npy_headers", &npy_headers, "Parse .npy headers of a batch of files", without_gil, "pool"_a, "paths"_a);
  m.def("npy_read", &npy_read, "Read windows of .npy arrays into a packed batch", without_gil, "pool"_a, "paths"_a,
        "data_offsets"_a, "fortran"_a, "src_shapes"_a, "anchors"_a, "out"_a, "out_shapes"_a, "out_offsets"_a,
        "elem_size"_a, "fill"_a);
  m.def("npy_buffer_headers", &npy_buffer_headers, "Parse the headers of a batch of in-memory .npy files",
        without_gil, "pool"_a, "src"_a, "shapes"_a, "offsets"_a);
  m.def("npy_decode", &npy_decode, "The arrays of a batch of in-memory .npy files, in C order", without_gil,
        "pool"_a, "src"_a, "src_shapes"_a, "src_offsets"_a, "data_offsets"_a, "fortran"_a, "out"_a, "out_shapes"_a,
        "out_offsets"_a, "elem_size"_a);
  m.def("recordio_records", &recordio_records,
        "MXNet RecordIO records (byte ranges back to back) -> (image bytes, sizes, float labels, label counts)",
        without_gil, "pool"_a, "ranges"_a, "starts"_a, "sizes"_a);
  m.def("inflate_lz4", &inflate_lz4, "Decompress LZ4 blocks (chunks of one buffer) into chunks of another",
        without_gil, "pool"_a, "src"_a, "src_starts"_a, "src_sizes"_a, "dst"_a, "dst_starts"_a, "dst_sizes"_a);
  m.def("caffe_datums", &caffe_datums,
        "Caffe Datum records (back to back) -> (image bytes, image sizes, int32 labels, label counts)", without_gil,
        "pool"_a, "records"_a, "starts"_a, "sizes"_a);
  m.def("caffe2_protos", &caffe2_protos,
        "Caffe2 TensorProtos records (back to back) -> per output (bytes, shapes [N, 3], ranks, element types)",
        without_gil, "pool"_a, "records"_a, "starts"_a, "sizes"_a, "image"_a, "label_type"_a, "num_labels"_a,
        "additional_inputs"_a, "bbox"_a);
  m.def("tfrecord_index", &tfrecord_index, "(offsets, sizes) of a TFRecord file's records, length CRCs checked",
        without_gil, "path"_a);
  m.def("tfrecord_read", &tfrecord_read, "Read and parse tf.train.Example records", without_gil, "pool"_a, "paths"_a,
        "offsets"_a, "sizes"_a, "names"_a, "kinds"_a);
  m.def("coco_masks", &coco_masks, "Paint COCO objects into pixelwise label masks", without_gil, "pool"_a, "out"_a,
        "out_offsets"_a, "heights"_a, "widths"_a, "labels"_a, "obj_off"_a, "obj_cnt"_a, "poly"_a, "poly_off"_a,
        "poly_cnt"_a, "vertices"_a, "vert_off"_a, "rle"_a, "rle_off"_a, "rle_cnt"_a, "rle_counts"_a);
  m.def("gather", &gather, "Copy contiguous arrays to byte offsets of one buffer (GIL released)", without_gil,
        "pool"_a, "srcs"_a, "dst_offsets"_a, "dst"_a);
  m.def("copy_ranges", &copy_ranges, "Copy byte ranges of one buffer to byte offsets of another (GIL released)",
        without_gil, "pool"_a, "src"_a, "src_offsets"_a, "dst"_a, "dst_offsets"_a, "counts"_a);

  // ---- image decoding ----
  m.def("image_libraries", &image_libraries,
        "The files that the engine and its libjpeg and libpng functions were loaded from");
  m.def("peek_image_shapes", &image::peek_image_shapes,
        "Shapes (H, W, C) of encoded images from their headers, in display orientation, and "
        "which samples need the Python (Pillow) fallback; an image of more than max_pixels pixels "
        "is an error of its sample",
        without_gil, "pool"_a, "data"_a, "shapes"_a, "offsets"_a, "output_type"_a = int(image::kAnyData),
        "adjust_orientation"_a = true, "max_pixels"_a = py::none());
  m.def(
      "random_doubles",
      [](const py::capsule& bit_generator, int64_t count) {
        if (count < 0) throw py::value_error("random_doubles: count must not be negative");
        NumpyBitGenerator& bits = bit_generator_of(bit_generator, "random_doubles");
        auto out = ArrayOf<double>::empty({count});
        double* draws = out.mutable_data();
        for (int64_t i = 0; i < count; ++i) draws[i] = next_double(bits);
        return out;
      },
      "`count` doubles in [0, 1) from a numpy bit generator (its capsule; the caller holds its lock), those "
      "numpy's Generator.random(count) gives (the GIL stays held)",
      "bit_generator"_a, "count"_a);
  m.def(
      "random_integers",
      [](const py::capsule& bit_generator, int64_t count, uint64_t range) {
        if (count < 0) throw py::value_error("random_integers: count must not be negative");
        NumpyBitGenerator& bits = bit_generator_of(bit_generator, "random_integers");
        auto out = I64Array::empty({count});
        int64_t* draws = out.mutable_data();
        for (int64_t i = 0; i < count; ++i) draws[i] = int64_t(bounded_draw(bits, range));
        return out;
      },
      "`count` integers in [0, range] from a numpy bit generator (its capsule; the caller holds its lock), those "
      "numpy's Generator.integers(0, range + 1, count) gives (the GIL stays held)",
      "bit_generator"_a, "count"_a, "range"_a);
  m.def(
      "random_crop_windows",
      [](const py::capsule& bit_generator, const I64Array& hw, int64_t attempts, double min_area, double max_area,
         double min_ratio, double max_ratio, double log_min_ratio, double log_max_ratio) {
        NumpyBitGenerator& bits = bit_generator_of(bit_generator, "random_crop_windows");
        py::gil_scoped_release released;
        return random_crop_windows(bits, hw, attempts, min_area, max_area, min_ratio, max_ratio, log_min_ratio,
                                   log_max_ratio);
      },
      "Random crop windows [N, 4] (y, x, h, w) of images hw [N, 2+], drawn from a numpy bit generator (its "
      "capsule; the caller holds its lock) as numpy's uniform and integers draw: the first of `attempts` "
      "(area fraction, aspect ratio) that fits, else the whole image clamped to the ratio range (the GIL "
      "released: a batch's thousands of draws held it ~120 us on an H100's host)",
      "bit_generator"_a, "hw"_a, "attempts"_a, "min_area"_a, "max_area"_a, "min_ratio"_a, "max_ratio"_a,
      "log_min_ratio"_a, "log_max_ratio"_a);
  m.def("image_gather_descriptors", &image_gather_descriptors,
        "The gather kernel's descriptors [N, 10] of windows [N, 4] of decoded images at device addresses "
        "(the GIL stays held)",
        "pointers"_a, "pitches"_a, "windows"_a, "channels"_a, "reverse"_a, "dst_offsets"_a);
  m.def("host_share_choose", &host_share_choose,
        "The mask of a batch's JPEGs for the host beside the GPU decoder, and whether the cap was lifted, from "
        "each sample's GPU bytes and host cost, what the host decodes anyway, both sides' rates, the largest host "
        "cost per GPU byte and the least gain that lifts it (without the GIL: a batch's choice held it ~70 us on an "
        "H100's host)",
        without_gil, "gpu_bytes"_a, "host_costs"_a, "host_already"_a, "host_rate"_a, "gpu_rate"_a, "max_ratio"_a, "open_gain"_a);
  m.def("verify_jpegs", &image::verify_jpegs,
        "Read the JPEGs of an encoded batch through to their end markers (no pixels made): a JPEG in which "
        "libjpeg-turbo finds corrupt data is its sample's error; files read through before are not read again",
        without_gil, "pool"_a, "data"_a, "shapes"_a, "offsets"_a);
  m.def("decode_images", &image::decode_images,
        "Decode a batch of encoded images (JPEG, PNG, BMP, PNM) to packed uint8 HWC; with return_geometry also "
        "[N, 3] (y0, x0, step): where each output starts in display coordinates of the full-size image and how "
        "many full-size pixels one output pixel spans. An image of more than max_pixels pixels is an error of its sample, and so is a JPEG "
        "libjpeg-turbo reports corrupt data in unless accept_corrupt_jpeg. With `into` (contiguous writeable "
        "arrays) and `places` ([N, 3]: per sample an array of `into`, a byte offset and the bytes it may take), "
        "where every sample fits its place, the pixels are written there and `out` is empty; else to a new array",
        without_gil, "pool"_a, "data"_a, "shapes"_a, "offsets"_a, "output_type"_a, "adjust_orientation"_a = true,
        "crop"_a = py::none(), "target_hw"_a = py::none(), "use_fast_idct"_a = false, "return_geometry"_a = false,
        "fancy_upsampling"_a = true, "max_pixels"_a = py::none(), "accept_corrupt_jpeg"_a = false,
        "into"_a = py::none(), "places"_a = py::none());
  // ---- batch calls in the background: submitted with the GIL held, run on a native thread, collected later ----
  py::class_<Pending, std::shared_ptr<Pending>>(m, "Pending", "The result of an engine call run in the background")
      .def("done", &Pending::done, "Whether the call finished")
      .def(
          "result",
          [](Pending& self) {
            if (!self.done()) {
              py::gil_scoped_release released;
              self.wait();
            }
            return self.take();
          },
          "The call's arrays (a tuple), waiting for them without the GIL; the call's exception, raised")
      .def_property_readonly("seconds", &Pending::seconds, "How long the call ran (0 until it finished)");
  py::class_<Background, std::shared_ptr<Background>>(
      m, "Background", "A native thread running engine calls in submission order, without the GIL")
      .def(py::init<const std::string&, int>(), "name"_a, "niceness"_a = 0,
           "The thread named `name` as the OS shows it, its CPU priority `niceness` steps lower (Linux's nice "
           "scale) when above 0")
      .def("close", &Background::close, without_gil, "Runs the calls already submitted, then ends the thread");
  m.def(
      "decode_images_later",
      [](Background& background, std::shared_ptr<ThreadPool> pool, Array data, I64Array shapes, I64Array offsets,
         int output_type, bool adjust_orientation, std::optional<I64Array> crop, bool use_fast_idct,
         bool fancy_upsampling, std::optional<int64_t> max_pixels, bool accept_corrupt_jpeg,
         std::optional<std::vector<Array>> into, std::optional<I64Array> places) {
        return background.submit([=] {
          return image::decode_images(*pool, data, shapes, offsets, output_type, adjust_orientation, crop,
                                      std::nullopt, use_fast_idct, false, fancy_upsampling, max_pixels,
                                      accept_corrupt_jpeg, into, places);
        });
      },
      "decode_images (without target_hw and geometry) run by `background`: a Pending of its arrays",
      "background"_a, "pool"_a, "data"_a, "shapes"_a, "offsets"_a, "output_type"_a, "adjust_orientation"_a,
      "crop"_a, "use_fast_idct"_a, "fancy_upsampling"_a, "max_pixels"_a, "accept_corrupt_jpeg"_a,
      "into"_a = py::none(), "places"_a = py::none());
  py::class_<FileList, std::shared_ptr<FileList>>(
      m, "FileList", "A reader's file paths, held by the engine: batches name them by index")
      .def(py::init([](std::vector<std::string> paths) { return FileList{std::move(paths)}; }), "paths"_a)
      .def("__len__", [](const FileList& self) { return self.paths.size(); });
  m.def(
      "read_files_later",
      [](Background& background, std::shared_ptr<ThreadPool> pool, std::shared_ptr<const FileList> files,
         I64Array indices) {
        return background.submit([=] {
          auto [buffer, sizes] = read_listed_files(*pool, *files, indices);
          return ArrayTuple{buffer, sizes};
        });
      },
      "read_files of the files `indices` of a FileList, run by `background`: a Pending of (buffer, sizes)",
      "background"_a, "pool"_a, "files"_a, "indices"_a);
  m.def(
      "verify_jpegs_later",
      [](Background& background, std::shared_ptr<ThreadPool> pool, Array data, I64Array shapes, I64Array offsets) {
        return background.submit([=] {
          image::verify_jpegs(*pool, data, shapes, offsets);
          return ArrayTuple{};
        });
      },
      "verify_jpegs run by `background`: a Pending of no arrays", "background"_a, "pool"_a, "data"_a, "shapes"_a,
      "offsets"_a);
  py::class_<codec::CodecMemory>(m, "CodecMemory",
                                 "Device or pinned memory for nvImageCodec's codecs, kept and reused once the work "
                                 "queued before a block was given back has run (the GPU decoders' allocator)")
      .def(py::init([](const std::string& kind, int device_id) {
             if (kind != "device" && kind != "pinned")
               throw std::invalid_argument("CodecMemory: kind is 'device' or 'pinned', not '" + kind + "'");
             return std::make_unique<codec::CodecMemory>(
                 kind == "device" ? codec::CodecMemory::Kind::kDevice : codec::CodecMemory::Kind::kPinned, device_id);
           }),
           "kind"_a, "device_id"_a)
      .def(
          "allocate",
          [](codec::CodecMemory& self, size_t size, uintptr_t stream) {
            void* ptr = nullptr;
            int status = codec::CodecMemory::allocate(&self, &ptr, size, reinterpret_cast<void*>(stream));
            if (status != 0) throw std::runtime_error("CodecMemory: allocating failed with status " +
                                                      std::to_string(status));
            return reinterpret_cast<uintptr_t>(ptr);
          },
          "size"_a, "stream"_a = 0, "An address (0 for size 0)")
      .def(
          "give_back",
          [](codec::CodecMemory& self, uintptr_t ptr, uintptr_t stream) {
            int status = codec::CodecMemory::give_back(&self, reinterpret_cast<void*>(ptr), 0,
                                                       reinterpret_cast<void*>(stream));
            if (status != 0) throw std::runtime_error("CodecMemory: giving back failed with status " +
                                                      std::to_string(status));
          },
          "ptr"_a, "stream"_a = 0, "Gives a block back; it is reused once the stream's work queued until now has run")
      .def("counts", [](const codec::CodecMemory& self) { return memory_counts(self.counts()); },
           "{'blocks', 'bytes' held, 'reused' (allocations a block given back before served)}");
  py::class_<ParsedBatch>(m, "ImageCodecParsedBatch", "A batch's code streams, read ahead of decoding")
      .def("parsed", &ParsedBatch::parsed)
      .def("close", &ParsedBatch::close, without_gil,
           "Destroys the code streams (decoded: hundreds of calls to nvImageCodec, without the GIL here, where the "
           "object's end holds it); decode refuses the batch afterwards");
  py::class_<ImageCodecDecoder>(m, "ImageCodecDecoder",
                                "nvImageCodec's decoder through its C API (opened at run time): a whole "
                                "batch per call, without the GIL")
      .def(py::init<const std::string&, const std::string&, int, int, const std::vector<std::tuple<int, float, int>>&,
                    const std::string&>(),
           "library"_a, "extensions"_a, "device_id"_a, "cpu_threads"_a, "backends"_a, "options"_a)
      .def("parse", &ImageCodecDecoder::parse, without_gil, "encoded"_a, "starts"_a, "lengths"_a, "shapes"_a,
           "orient"_a, "windows"_a = py::none())
      .def(
          "decode",
          [](ImageCodecDecoder& self, const ParsedBatch& batch, ArrayOf<uint64_t> dst, I64Array pitches,
             uintptr_t cuda_stream, uintptr_t wait_event,
             std::optional<std::tuple<uintptr_t, unsigned, unsigned, std::vector<uint64_t>>> then,
             uintptr_t then_wait_event, uintptr_t done_event) {
            AroundDecoding around;
            around.wait_event = wait_event;
            around.then_wait_event = then_wait_event;
            if (then) {
              auto& [function, grid, block, params] = *then;
              if (!function || !grid || !block)
                throw std::invalid_argument("ImageCodecDecoder.decode: `then` needs a function, a grid and a block");
              around.then = KernelLaunch{function, grid, block, params};
            }
            around.done_event = done_event;
            return self.decode(batch, dst, pitches, cuda_stream, around);
          },
          without_gil, "batch"_a, "dst"_a, "pitches"_a, "cuda_stream"_a, "wait_event"_a = 0, "then"_a = py::none(),
          "then_wait_event"_a = 0, "done_event"_a = 0,
          "Decodes the parsed samples; on the stream, waits for `wait_event` first, then decodes, waits "
          "for `then_wait_event`, launches `then` = (CUfunction, grid, block, [integer parameters]) and "
          "records `done_event`; returns (decoded mask, seconds the decoder's turn was held)")
      .def(
          "memory",
          [](const ImageCodecDecoder& self) {
            auto [device, pinned] = self.memory();
            return py::dict("device"_a = memory_counts(device), "pinned"_a = memory_counts(pinned));
          },
          "The codecs' memory the decoder holds for reuse: {'device' | 'pinned': {'blocks', 'bytes', "
          "'reused' (allocations served by a block given back before)}}");
  m.def("write_ppm", &write_ppm, "Writes uint8 HWC samples as plain PPM files, one path per sample", without_gil,
        "pool"_a, "src"_a, "shapes"_a, "offsets"_a, "paths"_a);
  m.def("jpeg_compression_distortion", &jpeg_compression_distortion,
        "Encode each (H, W, C) frame as JPEG at the sample's quality and decode it back (uint8, C = 1 or 3)",
        without_gil, "pool"_a, "src"_a, "shapes"_a, "src_offsets"_a, "dst"_a, "dst_offsets"_a, "qualities"_a);

  // ---- audio ----
  m.def("audio_library", &audio_library, "Loads libsndfile from a path (once); returns its version string",
        without_gil, "path"_a);
  m.def("audio_decode", &audio_decode,
        "Decodes a batch of encoded audio files (libsndfile) into one packed buffer, with optional downmixing, "
        "resampling and a range per file",
        without_gil, "pool"_a, "src"_a, "shapes"_a, "offsets"_a, "out_type"_a, "downmix"_a, "target_rates"_a,
        "quality"_a, "starts"_a = py::none(), "durations"_a = py::none());
  m.def("audio_resample", &audio_resample, "Windowed-sinc resampling of a batch of signals", without_gil, "pool"_a,
        "src"_a, "src_type"_a, "shapes"_a, "src_offsets"_a, "dst"_a, "dst_type"_a, "dst_shapes"_a, "dst_offsets"_a,
        "in_rates"_a, "out_rates"_a, "quality"_a);
  m.def("preemphasis", &preemphasis, "x[t] - coeff * x[t - 1] over each sample", without_gil, "pool"_a, "src"_a,
        "src_type"_a, "shapes"_a, "src_offsets"_a, "dst"_a, "dst_type"_a, "dst_offsets"_a, "coeffs"_a, "border"_a);
  m.def("spectrogram", &spectrogram, "Short-time power or magnitude spectra of a batch of 1-D signals", without_gil,
        "pool"_a, "src"_a, "lengths"_a, "src_offsets"_a, "dst"_a, "dst_shapes"_a, "dst_offsets"_a, "window"_a,
        "nfft"_a, "step"_a, "centered"_a, "reflect"_a, "power"_a, "freq_major"_a);
  m.def("power_spectrum", &power_spectrum, "Power or magnitude spectrum along the middle axis of [outer, n, inner]",
        without_gil, "pool"_a, "src"_a, "shapes"_a, "src_offsets"_a, "dst"_a, "dst_offsets"_a, "nffts"_a,
        "power"_a);
  m.def("matrix_along_axis", &matrix_along_axis, "A matrix applied along the middle axis of [outer, n, inner]",
        without_gil, "pool"_a, "src"_a, "shapes"_a, "src_offsets"_a, "dst"_a, "dst_offsets"_a, "matrices"_a,
        "which"_a);
  m.def("to_decibels", &to_decibels, "multiplier * log10(max(x / refs[i], floor_ratio))", without_gil, "pool"_a,
        "src"_a, "shapes"_a, "src_offsets"_a, "dst"_a, "dst_offsets"_a, "multiplier"_a, "refs"_a, "floor_ratio"_a);
  m.def("nonsilent_region", &nonsilent_region, "(begin, length) int32 of each sample's non-silent region",
        without_gil, "pool"_a, "src"_a, "src_type"_a, "lengths"_a, "src_offsets"_a, "cutoff_db"_a,
        "window_length"_a, "reference_power"_a);

  // ---- video ----
  m.def("yuv420_to_rgb", &yuv420_to_rgb,
        "Decoded 4:2:0 video frames (8 to 16-bit samples) to interleaved RGB (bilinear chroma, BT.601), every "
        "frame in one call",
        without_gil, "pool"_a, "y_addr"_a, "u_addr"_a, "v_addr"_a, "y_pitch"_a, "c_pitch"_a, "heights"_a, "widths"_a,
        "full_range"_a, "bit_depth"_a, "dst_addr"_a);

  // ---- element-wise, layout, statistics ----
  m.def("cast", sized<&cast, 2>(&cast),
        "Convert a buffer element by element (DALI's rounding and saturation; with crop_conversion, crop and "
        "slice's: truncating, and saturating float16); up to 64 KB of output with the GIL held",
        "pool"_a, "src"_a, "src_type"_a, "dst"_a, "dst_type"_a, "crop_conversion"_a = false);
  m.def("binary", sized<&binary, 8>(&binary),
        "Binary element-wise op with per-sample broadcasting; up to 64 KB of output with the GIL held");
  m.def("unary", sized<&unary, 3>(&unary), "Unary element-wise op; up to 64 KB of output with the GIL held");
  m.def("binary_descriptors", &binary_descriptors,
        "The GPU binary kernels' descriptor per sample [N, 28]: output offset and volume, operand offsets, output "
        "shape (padded with 1 to 8 dims), each operand's strides over the output's dims (0 where broadcast; the GIL "
        "stays held: per-batch planning of microseconds)",
        "out_shapes"_a, "out_offsets"_a, "a_shapes"_a, "a_offsets"_a, "b_shapes"_a, "b_offsets"_a);
  m.def("copy", sized<&copy, 1>(&copy), "Parallel copy of a whole buffer; up to 64 KB with the GIL held", "pool"_a,
        "src"_a, "dst"_a);
  m.def("transpose", &transpose, "Permute the dimensions of every sample", without_gil);
  m.def("transpose_descriptors", &transpose_descriptors,
        "The GPU transpose kernel's descriptor per sample [N, 19]: offsets, volume, the output's shape (padded with "
        "1) and the source's strides in perm order (padded with 0; the GIL stays held)",
        "src_shapes"_a, "src_offsets"_a, "perm"_a, "dst_offsets"_a);
  m.def("concat", sized<&concat, 4>(&concat),
        "Concatenate samples of several batches along an axis; up to 64 KB of output with the GIL held");
  m.def("slice", &slice,
        "Copy a window [anchor, anchor + out_shape) of every sample, with per-axis flips and per-channel fill "
        "outside the input",
        without_gil, "pool"_a, "src"_a, "src_shapes"_a, "src_offsets"_a, "dst"_a, "dst_shapes"_a, "dst_offsets"_a,
        "anchors"_a, "flips"_a, "fill"_a, "channel_dim"_a);
  m.def("slice_descriptors", &slice_descriptors,
        "The GPU slice kernel's descriptor per sample [N, 28]: offsets, output volume, flipped dims' bit mask, then "
        "source and output shapes (padded with 1) and anchors (padded with 0) to 8 dims (the GIL stays held: "
        "per-batch planning of microseconds)",
        "src_shapes"_a, "src_offsets"_a, "dst_shapes"_a, "dst_offsets"_a, "anchors"_a, "flips"_a);
  m.def("reduce", &reduce,
        "Reduction `kind` (0 sum, 1 mean, 2 mean_square, 3 rms, 4 min, 5 max, 6 variance, 7 std_dev) of every "
        "sample over `axes`, written at dst_offsets; variance and std_dev read mean[mean_offsets[i] + output]",
        without_gil, "pool"_a, "kind"_a, "src"_a, "src_shapes"_a, "src_offsets"_a, "axes"_a, "dst"_a,
        "dst_offsets"_a, "ddof"_a = 0, "mean"_a = py::none(), "mean_offsets"_a = py::none());
  m.def("normalize", &normalize, "(x - mean) / stddev * scale + shift in double into a float32 batch", without_gil,
        "pool"_a, "src"_a, "src_type"_a, "shapes"_a, "src_offsets"_a, "dst"_a, "dst_offsets"_a, "mean"_a,
        "mean_offsets"_a, "mean_strides"_a, "stddev"_a, "std_offsets"_a, "std_strides"_a, "scale"_a, "shift"_a);
  m.def("broadcast_samples", &broadcast_samples,
        "Broadcasts each sample of src (numpy rules, last axes aligned) to the shape of the same sample of dst",
        without_gil, "pool"_a, "src"_a, "src_shapes"_a, "src_offsets"_a, "dst"_a, "dst_shapes"_a, "dst_offsets"_a);
  m.def("noise", &noise, "Gaussian, shot or salt-and-pepper noise over a batch", without_gil, "pool"_a, "kind"_a,
        "data"_a, "shapes"_a, "offsets"_a, "out"_a, "out_offsets"_a, "seeds"_a, "params"_a, "channels"_a, "dtype"_a);

  // ---- images ----
  m.def("color_matrix", &color_matrix,
        "Per-sample affine colour transform of the last (channel) axis: out = M[:, :Cin] @ in + M[:, Cin], float "
        "math, rounded and saturated to the output type",
        without_gil, "pool"_a, "src"_a, "src_shapes"_a, "src_offsets"_a, "src_type"_a, "dst"_a, "dst_shapes"_a,
        "dst_offsets"_a, "dst_type"_a, "matrices"_a);
  m.def("scaled_identity_matrices", &scaled_identity_matrices,
        "Colour matrices [N, C, C + 1] (float32) of gain * in_c + offset per channel; gain and offset [N] or [1] "
        "(the GIL stays held: per-batch planning of microseconds)", "n"_a, "gain"_a, "offset"_a, "channels"_a);
  m.def("hsv_matrices", &hsv_matrices,
        "Colour matrices [N, 3, 4] (float32): RGB to YIQ, chroma rotated by the hue (degrees) and scaled by the "
        "saturation, all by the value, back to RGB, times gain, plus offset; columns [N] or [1] (the GIL stays "
        "held: per-batch planning of microseconds)",
        "n"_a, "hue"_a, "saturation"_a, "value"_a, "gain"_a, "offset"_a, "yiq_to_rgb"_a, "rgb_to_yiq"_a);
  m.def("crop_mirror_normalize_plan", &crop_mirror_normalize_plan,
        "The GPU crop_mirror_normalize's descriptor per sample [N, 28] and scale / std as floats (the GIL stays "
        "held: per-batch planning of microseconds)",
        "src_shapes"_a, "src_offsets"_a, "dst_shapes"_a, "dst_offsets"_a, "anchors"_a, "mirror"_a, "std"_a, "scale"_a,
        "channel_out_dim"_a);
  m.def("crop_mirror_normalize", &crop_mirror_normalize,
        "Fused crop (with fill outside the input), horizontal mirror, (x - mean) / std * scale + shift, channel "
        "move and type conversion",
        without_gil, "pool"_a, "src"_a, "src_shapes"_a, "src_offsets"_a, "src_type"_a, "dst"_a, "dst_shapes"_a,
        "dst_offsets"_a, "dst_type"_a, "anchors"_a, "mirror"_a, "mean"_a, "std"_a, "scale"_a, "shift"_a,
        "fill_values"_a, "channel_out_dim"_a, "pad_output"_a);
  m.def("resize", &resize, "Separable resampling of [outer..., (D,) H, W, C] samples to the output batch's sizes",
        without_gil, "pool"_a, "src"_a, "src_shapes"_a, "src_offsets"_a, "src_type"_a, "dst"_a, "dst_shapes"_a,
        "dst_offsets"_a, "dst_type"_a, "spatial_ndim"_a, "roi"_a, "min_filter"_a, "mag_filter"_a, "antialias"_a);
  m.def("resize_taps", &resize_taps,
        "Resampling taps of many axes (for kernels that resample elsewhere, such as the GPU)", without_gil,
        "pool"_a, "in_sizes"_a, "out_sizes"_a, "roi_start"_a, "roi_end"_a, "min_filter"_a, "mag_filter"_a,
        "antialias"_a);
  m.def("resize_output_sizes", &resize_output_sizes,
        "The resize operators' output sizes for source regions [N, 2S] (starts, then ends), per axis the requested "
        "size ([N] or [1]; 0 unset, negative flips), resize_shorter and resize_longer ([N] or [1]), mode (0 default, "
        "1 stretch, 2 not_larger, 3 not_smaller) and max_size ([S], 0 no cap; empty: none): the float sizes [N, S], "
        "the whole sizes [N, S] and the source ROIs [N, 2S] (the GIL stays held: per-batch planning of microseconds)",
        "regions"_a, "requested"_a, "shorter"_a, "longer"_a, "mode"_a, "max_size"_a, "subpixel_scale"_a);
  m.def("resize_axis_spans", &resize_axis_spans,
        "Per axis of a GPU resize (y then x of each sample): the taps kernel's rows [2N, 8], the source range "
        "each reads (lo, hi), its region [2N, 2], the taps kernel's block starts, and [total starts, total "
        "weights, most taps, taps blocks] (without the GIL: a batch's planning held it 40-50 us on an H100's host)",
        without_gil, "src_shapes"_a, "dst_shapes"_a, "roi"_a, "min_filter"_a, "mag_filter"_a, "antialias"_a,
        "per_block"_a);
  m.def("resize_pass_plan", &resize_pass_plan,
        "A GPU resize's two passes from its axis spans: per-frame descriptors, both passes' block starts per "
        "run, the runs [first frame, end frame, vertical grid, horizontal grid, block starts at] and the "
        "intermediate's elements (without the GIL: a batch's planning held it ~50 us on an H100's host)",
        without_gil, "src_shapes"_a, "dst_shapes"_a, "src_offsets"_a, "dst_offsets"_a, "axes"_a, "lo"_a, "hi"_a,
        "tmp_budget"_a, "per_block"_a);
  m.def("resize_normalize_plan", &resize_normalize_plan,
        "The rows of a GPU resize's pass that stores crop_mirror_normalize's output: per sample its window row "
        "[N, 8] and normalization row (shift, fill values, means, scale / std); none when a window reaches outside "
        "its resized image (the GIL stays held: per-batch planning of microseconds)",
        "mid_shapes"_a, "anchors"_a, "windows"_a, "mirror"_a, "out_offsets"_a, "channel_out_dim"_a, "fill"_a,
        "mean"_a, "std"_a, "scale"_a, "shift"_a);
  m.def("rotated_sizes", &rotated_sizes,
        "rotate's output sizes [N, 2] (H, W) for images of shapes [N, 4] (frames, H, W, C) turned by angles [N] "
        "degrees: the input's with keep_size, else the parity-kept rotated bounding box", "angles"_a, "shapes"_a,
        "keep_size"_a);
  m.def("rotation_matrices", &rotation_matrices,
        "Output -> input maps [N, 2, 3] (float32) of counter-clockwise rotations by angles [N] degrees about the "
        "centres of images of shapes [N, 4] (frames, H, W, C) into outputs of out_hw [N, 2]",
        "angles"_a, "shapes"_a, "out_hw"_a);
  m.def("warp_affine", &warp_affine,
        "Affine warp of (frames, H, W, C) samples; matrices [N, 2, 3] map output pixel centres to input "
        "coordinates; interp 0 = nearest, 1 = linear; fill None = clamp to the border",
        without_gil, "pool"_a, "src"_a, "src_shapes"_a, "src_offsets"_a, "dst"_a, "dst_shapes"_a, "dst_offsets"_a,
        "dtype"_a, "matrices"_a, "interp"_a, "fill"_a = py::none());
  m.def("blur_windows", &blur_windows,
        "gaussian_blur's sigmas (float32) and window sizes [N, k] from sigma and window_size [N or 1, k], each pair's "
        "missing half filled in (ValueError in DALI's words for a bad value)", "n"_a, "sigma"_a, "window"_a);
  m.def("gaussian_windows", &gaussian_windows,
        "The CPU kernel's Gaussian weights (float32) of sigmas and odd window sizes [N, k], back to back, and each "
        "window's start [N, k]", "sigmas"_a, "windows"_a);
  m.def("gaussian_blur", &gaussian_blur,
        "Separable Gaussian blur of samples shaped (frames, spatial..., channels), reflect-101 borders, per-sample "
        "per-axis sigma and odd window size (1 = axis untouched)",
        without_gil, "pool"_a, "src"_a, "shapes"_a, "src_offsets"_a, "src_type"_a, "dst"_a, "dst_offsets"_a,
        "dst_type"_a, "sigmas"_a, "windows"_a);
  m.def("erase", &erase, "Copy samples and fill boxes [start, end) (clipped) with one value or one per channel",
        without_gil, "pool"_a, "src"_a, "shapes"_a, "src_offsets"_a, "dtype"_a, "dst"_a, "dst_offsets"_a, "boxes"_a,
        "box_offsets"_a, "fill"_a);
  m.def("erase_regions", &erase_regions,
        "erase's boxes [R, 2 nd] (starts, then ends; ends rounded down) and each sample's first box [N + 1] from "
        "per-sample anchors and shapes (k = len(axes) values a region; starts and counts [N] or [1])",
        "sample_shapes"_a, "axes"_a, "anchors"_a, "anchor_starts"_a, "anchor_counts"_a, "shapes"_a, "shape_starts"_a,
        "shape_counts"_a, "normalized_anchor"_a, "normalized_shape"_a, "centered_anchor"_a);
  m.def("grid_mask", &grid_mask,
        "Zero a rotated, shifted grid of squares in (H, W, C) samples; params [N, 5] = tile, ratio, angle (rad), "
        "shift_x, shift_y",
        without_gil, "pool"_a, "src"_a, "shapes"_a, "src_offsets"_a, "dtype"_a, "dst"_a, "dst_offsets"_a,
        "params"_a);
  m.def("warp_perspective", &warp_perspective,
        "Perspective warp of (frames, H, W, C) samples as OpenCV's warpPerspective (inverse map, centres at "
        "integers): interp 0 nearest, 1 linear, 2 cubic; border 0 constant, 1 replicate, 2 reflect, 3 reflect 101, "
        "4 wrap",
        without_gil, "pool"_a, "src"_a, "src_shapes"_a, "src_offsets"_a, "dst"_a, "dst_shapes"_a, "dst_offsets"_a,
        "dtype"_a, "matrices"_a, "interp"_a, "border"_a, "fill"_a);
  m.def("remap", &remap, "Samples each output pixel at per-pixel source coordinates (mapx, mapy), border 0",
        without_gil, "pool"_a, "src"_a, "shapes"_a, "src_offsets"_a, "dst"_a, "dst_shapes"_a, "dst_offsets"_a,
        "dtype"_a, "mapx"_a, "mapy"_a, "map_offsets"_a, "interp"_a, "centre"_a);
  m.def("displacement", &displacement,
        "Water (kind 0), sphere (1) or jitter (2) displacement of HWC images, nearest or bilinear sampling",
        without_gil, "pool"_a, "src"_a, "shapes"_a, "src_offsets"_a, "type"_a, "dst"_a, "dst_offsets"_a, "kind"_a,
        "params"_a, "masks"_a, "linear"_a, "fill"_a);
  m.def("filter", &filter,
        "Correlation of samples shaped (outer, 2-3 spatial dims, channels) with a per-sample filter, anchored, "
        "with a border mode (reflect 101, reflect 1001, wrap, clamp, constant)",
        without_gil, "pool"_a, "src"_a, "shapes"_a, "src_offsets"_a, "src_type"_a, "dst"_a, "out_shapes"_a,
        "dst_offsets"_a, "dst_type"_a, "filters"_a, "filter_shapes"_a, "filter_offsets"_a, "anchors"_a, "border"_a,
        "fill"_a);
  m.def("laplacian", &laplacian,
        "Sum over the spatial axes of scaled separable passes (derivative and smoothing windows), reflect-101 borders",
        without_gil, "pool"_a, "src"_a, "shapes"_a, "src_offsets"_a, "src_type"_a, "dst"_a, "dst_offsets"_a,
        "dst_type"_a, "windows"_a, "window_sizes"_a, "window_offsets"_a, "scales"_a);
  m.def("rank_filter", &rank_filter,
        "Median, minimum (erosion) or maximum (dilation) over a 2-D window of samples shaped (outer, H, W, C)",
        without_gil, "pool"_a, "src"_a, "shapes"_a, "src_offsets"_a, "dst"_a, "dst_offsets"_a, "type"_a, "rank"_a,
        "windows"_a, "anchors"_a, "border"_a, "iterations"_a);
  m.def("lab_tables", &clahe_lab_tables,
        "The fixed-point RGB -> Lab tables of clahe (gamma, cube root, matrix), for the GPU kernels");
  m.def("clahe", &clahe,
        "Contrast limited adaptive histogram equalization of uint8 HWC images (1 channel, or RGB per channel or "
        "through Lab's L)",
        without_gil, "pool"_a, "src"_a, "shapes"_a, "src_offsets"_a, "dst"_a, "dst_offsets"_a, "tiles"_a,
        "clip_limits"_a, "luma"_a);
  m.def("debayer", &debayer, "Bilinear demosaicing (RGB) or grey conversion of Bayer frames, OpenCV's arithmetic",
        without_gil, "pool"_a, "src"_a, "shapes"_a, "src_offsets"_a, "type"_a, "dst"_a, "dst_offsets"_a, "blue"_a,
        "grey"_a);
  m.def("multi_paste", &multi_paste,
        "Canvases of zeros with regions of input samples pasted in order, converted to the output type",
        without_gil, "pool"_a, "sources"_a, "src_type"_a, "dst"_a, "dst_shapes"_a, "dst_offsets"_a, "dst_type"_a,
        "regions"_a, "region_start"_a);
  m.def("channel_histograms", &channel_histograms, "Per-sample, per-channel histograms of uint8 images", without_gil);
  m.def("parameter_luts", &parameter_luts,
        "Lookup tables [N, channels, 256] of posterize, solarize, solarize_add or invert, one parameter per sample "
        "(the GIL stays held: a batch's tables are a few hundred KB)",
        "kind"_a, "params"_a, "channels"_a);
  m.def("apply_lut", &apply_lut, "A 256-entry lookup table per sample and channel", without_gil);
  m.def("sharpness", &sharpness, "PIL-style sharpness enhancement, one factor per sample", without_gil);

  // ---- detection and segmentation ----
  m.def("box_encoder", &box_encoder, "SSD box encoding of a batch", without_gil, "pool"_a, "boxes"_a, "box_counts"_a,
        "box_offsets"_a, "labels"_a, "anchors"_a, "criteria"_a, "offset"_a, "scale"_a, "means"_a, "stds"_a,
        "out_boxes"_a, "out_labels"_a);
  m.def("connected_components", &connected_components, "Objects (connected components) of a batch of label maps",
        without_gil, "pool"_a, "data"_a, "shapes"_a, "offsets"_a, "background"_a, "merge_classes"_a);
}
