#include "engine/batch_shapes.h"

#include <algorithm>
#include <stdexcept>
#include <string>

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

namespace penstock {
namespace {

// Checks that columns [first, first + count) exist in table [N, M].
void check_columns(const I64Array& table, int64_t first, int64_t count, const char* what) {
  if (table.ndim() != 2) throw std::invalid_argument(std::string(what) + ": the table must be [samples, columns]");
  if (first < 0 || count < 0 || first + count > table.shape(1))
    throw std::invalid_argument(std::string(what) + ": columns " + std::to_string(first) + ".." +
                                std::to_string(first + count) + " are not in a table of " +
                                std::to_string(table.shape(1)));
}

}  // namespace

I64Array with_columns(const I64Array& table, int64_t first, const I64Array& values) {
  const bool per_row = values.ndim() == 2;
  if (!per_row && values.ndim() != 1) throw std::invalid_argument("with_columns: values must be [K] or [N, K]");
  const int64_t count = values.shape(values.ndim() - 1);
  check_columns(table, first, count, "with_columns");
  const int64_t n = table.shape(0), width = table.shape(1);
  if (per_row && values.shape(0) != n)
    throw std::invalid_argument("with_columns: " + std::to_string(values.shape(0)) + " rows of values for " +
                                std::to_string(n) + " rows");
  I64Array out = I64Array::empty({n, width});
  const int64_t* in = table.data();
  const int64_t* v = values.data();
  int64_t* o = out.mutable_data();
  for (int64_t k = 0; k < n; ++k) {
    std::copy(in + k * width, in + (k + 1) * width, o + k * width);
    std::copy(v + (per_row ? k * count : 0), v + (per_row ? k * count : 0) + count, o + k * width + first);
  }
  return out;
}

ArrayOf<double> whole_regions(const I64Array& shapes, int64_t first, int64_t count) {
  check_columns(shapes, first, count, "whole_regions");
  const int64_t n = shapes.shape(0), width = shapes.shape(1);
  auto out = ArrayOf<double>::empty({n, 2 * count});
  double* o = out.mutable_data();
  for (int64_t k = 0; k < n; ++k)
    for (int64_t d = 0; d < count; ++d) {
      o[k * 2 * count + d] = 0.0;
      o[k * 2 * count + count + d] = double(shapes.data()[k * width + first + d]);
    }
  return out;
}

}  // namespace penstock
