#include "engine/batch_shapes.h"

namespace penstock {
namespace {

// Calls per_sample(k, volume) for every row of shapes [N, D].
template <typename PerSample>
void for_each_volume(const I64Array& shapes, const char* what, PerSample per_sample) {
  if (shapes.ndim() != 2) throw std::invalid_argument(std::string(what) + ": shapes must be [samples, dims]");
  const int64_t n = shapes.shape(0), dims = shapes.shape(1);
  const int64_t* row = shapes.data();
  for (int64_t k = 0; k < n; ++k, row += dims) {
    int64_t volume = 1;
    for (int64_t d = 0; d < dims; ++d) volume *= row[d];
    per_sample(k, volume);
  }
}

}  // namespace

I64Array shape_volumes(const I64Array& shapes) {
  auto out = I64Array::empty({shapes.ndim() == 2 ? shapes.shape(0) : 0});
  int64_t* volumes = out.mutable_data();
  for_each_volume(shapes, "shape_volumes", [&](int64_t k, int64_t volume) { volumes[k] = volume; });
  return out;
}

I64Array packed_offsets(const I64Array& shapes) {
  auto out = I64Array::empty({shapes.ndim() == 2 ? shapes.shape(0) : 0});
  int64_t* offsets = out.mutable_data();
  int64_t next = 0;
  for_each_volume(shapes, "packed_offsets", [&](int64_t k, int64_t volume) {
    offsets[k] = next;
    next += volume;
  });
  return out;
}

int64_t first_window_outside(const I64Array& shapes, const I64Array& anchors, const I64Array& windows) {
  if (shapes.ndim() != 2 || anchors.shape() != shapes.shape() || windows.shape() != shapes.shape())
    throw std::invalid_argument("first_window_outside: shapes, anchors and windows must be [samples, dims] alike");
  const int64_t n = shapes.shape(0), dims = shapes.shape(1);
  for (int64_t k = 0; k < n * dims; ++k)
    if (anchors.data()[k] < 0 || anchors.data()[k] + windows.data()[k] > shapes.data()[k]) return k / dims;
  return -1;
}

}  // namespace penstock
