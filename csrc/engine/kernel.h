// What a kernel's entry point takes, returns and throws, without Python: numpy arrays arrive as
// Array views (bindings.cpp, the one unit that includes pybind11, converts them), new arrays are
// returned as Arrays that own their memory, and bad samples are reported with SampleError. Kernel
// files include this header, never pybind11's: pybind11's headers cost every unit that includes
// them seconds of compile time (csrc/README.md).
#pragma once
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "engine/dtype.h"
#include "engine/thread_pool.h"

namespace penstock {

// numpy's kind character of an element type: 'b' bool, 'i' signed, 'u' unsigned, 'f' floating.
template <typename T>
constexpr char kind_of() {
  if constexpr (std::is_same_v<T, bool>) return 'b';
  else if constexpr (std::is_same_v<T, float16> || std::is_floating_point_v<T>) return 'f';
  else if constexpr (std::is_signed_v<T>) return 'i';
  else return 'u';
}

// A numpy array: its memory (data, dtype as numpy's kind and item size, shape, flags) and what
// keeps that memory alive (a reference to the numpy array it views, or the memory a kernel
// allocated for a new array). Copies share the memory.
class Array {
 public:
  Array() = default;
  Array(void* data, char kind, int64_t itemsize, std::vector<int64_t> shape, bool c_contiguous, bool writeable,
        std::shared_ptr<void> owner)
      : data_(data), kind_(kind), itemsize_(itemsize), shape_(std::move(shape)), c_contiguous_(c_contiguous),
        writeable_(writeable), owner_(std::move(owner)) {}

  // A new C-contiguous array, uninitialized; `pooled` takes its memory from the host buffer
  // pool (engine/buffer_pool.h), where large batch outputs are recycled.
  static Array empty(char kind, int64_t itemsize, std::vector<int64_t> shape, bool pooled = false);

  const void* data() const { return data_; }
  void* mutable_data() const {
    if (!writeable_) throw std::invalid_argument("array is not writeable");
    return data_;
  }
  char kind() const { return kind_; }
  int64_t itemsize() const { return itemsize_; }
  int64_t ndim() const { return int64_t(shape_.size()); }
  int64_t shape(int64_t axis) const { return shape_[axis]; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int64_t size() const {
    int64_t n = 1;
    for (int64_t s : shape_) n *= s;
    return n;
  }
  int64_t nbytes() const { return size() * itemsize_; }
  bool c_contiguous() const { return c_contiguous_; }
  bool writeable() const { return writeable_; }
  const std::shared_ptr<void>& owner() const { return owner_; }

  template <typename T>
  bool holds() const { return kind_ == kind_of<T>() && itemsize_ == int64_t(sizeof(T)); }

  // The same memory seen with another element type (item sizes must divide the bytes).
  Array reinterpreted(char kind, int64_t itemsize, std::vector<int64_t> shape) const {
    return Array(data_, kind, itemsize, std::move(shape), c_contiguous_, writeable_, owner_);
  }

 private:
  void* data_ = nullptr;
  char kind_ = 'u';
  int64_t itemsize_ = 1;
  std::vector<int64_t> shape_;
  bool c_contiguous_ = true, writeable_ = true;
  std::shared_ptr<void> owner_;
};

// A C-contiguous array of T. As an argument, the bindings convert what Python passes to it:
// safely (int32 to int64, lists, ...), or, with ForceCast, any numeric array (float64 to float32).
template <typename T, bool ForceCast = false>
class ArrayOf : public Array {
 public:
  ArrayOf() = default;
  explicit ArrayOf(Array a) : Array(std::move(a)) {}

  static ArrayOf empty(std::vector<int64_t> shape, bool pooled = false) {
    return ArrayOf(Array::empty(kind_of<T>(), sizeof(T), std::move(shape), pooled));
  }

  const T* data() const { return static_cast<const T*>(Array::data()); }
  T* mutable_data() const { return static_cast<T*>(Array::mutable_data()); }

  // Element i of a 1-D array, or [i, j] of a 2-D one, its indices checked (as py::array_t::at).
  const T& at(int64_t i) const { return data()[checked({i})]; }
  const T& at(int64_t i, int64_t j) const { return data()[checked({i, j})]; }

 private:
  int64_t checked(std::initializer_list<int64_t> index) const {
    if (int64_t(index.size()) != ndim())
      throw std::out_of_range("an array of " + std::to_string(ndim()) + " dimensions indexed with " +
                              std::to_string(index.size()));
    int64_t flat = 0, axis = 0;
    for (int64_t i : index) {
      if (i < 0 || i >= shape(axis))
        throw std::out_of_range("index " + std::to_string(i) + " is out of bounds for axis " + std::to_string(axis) +
                                " with size " + std::to_string(shape(axis)));
      flat = flat * shape(axis++) + i;
    }
    return flat;
  }
};

// Shapes, offsets and other int64 arguments cross as C-contiguous int64 arrays.
using I64Array = ArrayOf<int64_t>;

// Arrays returned together, as many as the call asks for: a tuple in Python.
struct ArrayTuple : std::vector<Array> {
  using std::vector<Array>::vector;
};

// Thrown by a kernel when one sample is bad (corrupt file, out-of-range argument ...). Reaches
// Python as penstock._engine.SampleError with args (message, sample_index), so the executor can
// name the sample's source (file name) in the error it raises.
struct SampleError : std::runtime_error {
  SampleError(int64_t sample_index, const std::string& message)
      : std::runtime_error(message), sample(sample_index) {}
  int64_t sample;
};

// A batch of samples packed in one buffer: sample i starts at element offsets[i] and has
// shape shapes[i, :]. This is how every TensorListCPU crosses into native code.
struct BatchView {
  void* data = nullptr;
  int64_t num_samples = 0;
  int64_t ndim = 0;
  const int64_t* shapes = nullptr;   // [num_samples, ndim]
  const int64_t* offsets = nullptr;  // [num_samples], in elements
  int64_t elem_size = 1;

  int64_t volume(int64_t i) const {
    int64_t v = 1;
    for (int64_t d = 0; d < ndim; ++d) v *= shapes[i * ndim + d];
    return v;
  }
  const int64_t* shape(int64_t i) const { return shapes + i * ndim; }
  template <typename T>
  T* sample(int64_t i) const { return static_cast<T*>(data) + offsets[i]; }
  // sample i's first byte, whatever the element type
  char* sample_bytes(int64_t i) const { return static_cast<char*>(data) + offsets[i] * elem_size; }
};

// Builds a BatchView from (buffer, shapes[N, ndim], offsets[N]), checking that every sample lies
// inside the buffer. The arrays must outlive the view.
BatchView make_batch_view(const Array& data, const I64Array& shapes, const I64Array& offsets, bool writable);

}  // namespace penstock
