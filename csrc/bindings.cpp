// The extension module penstock._engine: the thread pool plus every kernel file's bindings.
#include "engine/module.h"

namespace penstock {

BatchView make_batch_view(py::array& data, I64Array& shapes, I64Array& offsets, bool writable) {
  if (!(data.flags() & py::array::c_style)) throw std::invalid_argument("batch buffer must be contiguous");
  if (writable && !data.writeable()) throw std::invalid_argument("output buffer is read-only");
  if (shapes.ndim() != 2 || offsets.ndim() != 1 || shapes.shape(0) != offsets.shape(0))
    throw std::invalid_argument("batch shapes must be [N, ndim] and offsets [N]");
  BatchView v;
  v.data = const_cast<void*>(data.data());
  v.num_samples = shapes.shape(0);
  v.ndim = shapes.shape(1);
  v.shapes = shapes.data();
  v.offsets = offsets.data();
  v.elem_size = data.itemsize();
  int64_t capacity = data.size();
  for (int64_t i = 0; i < v.num_samples; ++i)
    if (v.offsets[i] < 0 || v.offsets[i] + v.volume(i) > capacity)
      throw std::out_of_range("sample " + std::to_string(i) + " lies outside its batch buffer");
  return v;
}

}  // namespace penstock

PYBIND11_MODULE(_engine, m) {
  namespace py = pybind11;
  m.doc() = "penstock native engine: thread pool and batch kernels";
  py::class_<penstock::ThreadPool>(m, "ThreadPool")
      .def(py::init<int>(), py::arg("num_threads"))
      .def_property_readonly("num_threads", &penstock::ThreadPool::num_threads);
  static py::exception<penstock::SampleError> sample_error(m, "SampleError", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const penstock::SampleError& e) {
      py::object args = py::make_tuple(py::str(e.what()), e.sample);
      PyErr_SetObject(sample_error.ptr(), args.ptr());
    }
  });
  for (auto& [name, bind] : penstock::binders()) bind(m);
}
