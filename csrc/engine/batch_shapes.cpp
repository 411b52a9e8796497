#include "engine/batch_shapes.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

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

// Row rows[k] of a table of n rows (negative: from the end), checked.
int64_t row_at(const I64Array& rows, int64_t k, int64_t n, const char* what) {
  const int64_t r = rows.data()[k];
  if (r < -n || r >= n)
    throw std::out_of_range(std::string(what) + ": row " + std::to_string(r) + " is out of bounds for " +
                            std::to_string(n) + " rows");
  return r < 0 ? r + n : r;
}

}  // namespace

I64Array shape_volumes(const I64Array& shapes) {
  auto out = I64Array::empty({shapes.ndim() == 2 ? shapes.shape(0) : 0});
  int64_t* volumes = out.mutable_data();
  for_each_volume(shapes, "shape_volumes", [&](int64_t k, int64_t volume) { volumes[k] = volume; });
  return out;
}

I64Array zero_table(int64_t rows, int64_t width) {
  if (rows < 0 || width < 0) throw std::invalid_argument("zero_table: rows and width must not be negative");
  auto table = I64Array::empty({rows, width});
  std::fill(table.mutable_data(), table.mutable_data() + rows * width, int64_t(0));
  return table;
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

ArrayTuple places_in_blocks(const I64Array& shapes, int64_t block_bytes) {
  if (block_bytes <= 0) throw std::invalid_argument("places_in_blocks: block_bytes must be positive");
  auto places = I64Array::empty({shapes.ndim() == 2 ? shapes.shape(0) : 0, 3});
  int64_t* rows = places.mutable_data();
  std::vector<int64_t> used;
  for_each_volume(shapes, "places_in_blocks", [&](int64_t k, int64_t volume) {
    if (used.empty() || (used.back() > 0 && used.back() + volume > block_bytes)) used.push_back(0);
    rows[3 * k] = int64_t(used.size()) - 1;
    rows[3 * k + 1] = used.back();
    rows[3 * k + 2] = volume;
    used.back() += volume;
  });
  auto blocks = I64Array::empty({int64_t(used.size())});
  std::copy(used.begin(), used.end(), blocks.mutable_data());
  return {places, blocks};
}

ArrayTuple image_planes(const I64Array& shapes, const I64Array& offsets, const I64Array& out_offsets, int64_t frame,
                        int64_t channel, int64_t height, int64_t width) {
  if (shapes.ndim() != 2 || offsets.ndim() != 1 || offsets.shape(0) != shapes.shape(0) ||
      out_offsets.shape() != offsets.shape())
    throw std::invalid_argument("image_planes: shapes must be [samples, dims], offsets and out_offsets [samples]");
  const int64_t n = shapes.shape(0), dims = shapes.shape(1);
  for (int64_t axis : {frame, channel, height, width})
    if (axis < -1 || axis >= dims)
      throw std::invalid_argument("image_planes: axis " + std::to_string(axis) + " is not in shapes of " +
                                  std::to_string(dims) + " dims");
  if (height < 0 || width < 0) throw std::invalid_argument("image_planes: the images need a height and a width");
  const bool planar = channel >= 0 && channel < height;
  const int64_t* s = shapes.data();
  auto extent = [&](int64_t k, int64_t axis) { return axis >= 0 ? s[k * dims + axis] : int64_t(1); };
  int64_t planes = 0;
  for (int64_t k = 0; k < n; ++k) planes += extent(k, frame) * (planar ? extent(k, channel) : 1);
  auto sample = I64Array::empty({planes});
  auto plane_shapes = I64Array::empty({planes, 3});
  auto plane_offsets = I64Array::empty({planes});
  auto plane_out_offsets = I64Array::empty({planes});
  int64_t* out_sample = sample.mutable_data();
  int64_t* out_shape = plane_shapes.mutable_data();
  int64_t* in_offset = plane_offsets.mutable_data();
  int64_t* out_offset = plane_out_offsets.mutable_data();
  for (int64_t k = 0, m = 0; k < n; ++k) {
    const int64_t h = extent(k, height), w = extent(k, width), c = planar ? 1 : extent(k, channel);
    const int64_t count = extent(k, frame) * (planar ? extent(k, channel) : 1);
    for (int64_t j = 0; j < count; ++j, ++m) {
      out_sample[m] = k;
      out_shape[3 * m] = h;
      out_shape[3 * m + 1] = w;
      out_shape[3 * m + 2] = c;
      in_offset[m] = offsets.data()[k] + j * h * w * c;
      out_offset[m] = out_offsets.data()[k] + j * h * w * c;
    }
  }
  return ArrayTuple{sample, plane_shapes, plane_offsets, plane_out_offsets};
}

int64_t first_window_outside(const I64Array& shapes, const I64Array& anchors, const I64Array& windows) {
  if (shapes.ndim() != 2 || anchors.shape() != shapes.shape() || windows.shape() != shapes.shape())
    throw std::invalid_argument("first_window_outside: shapes, anchors and windows must be [samples, dims] alike");
  const int64_t n = shapes.shape(0), dims = shapes.shape(1);
  for (int64_t k = 0; k < n * dims; ++k)
    if (anchors.data()[k] < 0 || anchors.data()[k] + windows.data()[k] > shapes.data()[k]) return k / dims;
  return -1;
}

int64_t first_window_outside_image(const I64Array& windows, const I64Array& shapes) {
  if (windows.ndim() != 2 || windows.shape(1) != 4 || shapes.ndim() != 2 || shapes.shape(1) < 2 ||
      shapes.shape(0) != windows.shape(0))
    throw std::invalid_argument("first_window_outside_image: windows [N, 4] and shapes [N, 2 or more]");
  const int64_t n = windows.shape(0), row = shapes.shape(1);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t* w = windows.data() + 4 * i;
    const int64_t* s = shapes.data() + row * i;
    if (w[0] < 0 || w[1] < 0 || w[2] < 1 || w[3] < 1 || w[0] + w[2] > s[0] || w[1] + w[3] > s[1]) return i;
  }
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

I64Array with_columns(const I64Array& table, int64_t first, const I64Array& values, int64_t values_first,
                      int64_t count) {
  const bool per_row = values.ndim() == 2;
  if (!per_row && values.ndim() != 1) throw std::invalid_argument("with_columns: values must be [V] or [N, V]");
  const int64_t width_of_values = values.shape(values.ndim() - 1);
  if (count < 0) count = width_of_values - values_first;
  if (values_first < 0 || count < 0 || values_first + count > width_of_values)
    throw std::invalid_argument("with_columns: columns " + std::to_string(values_first) + ".." +
                                std::to_string(values_first + count) + " are not in values of " +
                                std::to_string(width_of_values));
  check_columns(table, first, count, "with_columns");
  const int64_t n = table.shape(0), width = table.shape(1);
  if (per_row && values.shape(0) != n)
    throw std::invalid_argument("with_columns: " + std::to_string(values.shape(0)) + " rows of values for " +
                                std::to_string(n) + " rows");
  I64Array out = I64Array::empty({n, width});
  const int64_t* in = table.data();
  int64_t* o = out.mutable_data();
  for (int64_t k = 0; k < n; ++k) {
    const int64_t* v = values.data() + (per_row ? k * width_of_values : 0) + values_first;
    std::copy(in + k * width, in + (k + 1) * width, o + k * width);
    std::copy(v, v + count, o + k * width + first);
  }
  return out;
}

I64Array take_rows(const I64Array& table, const I64Array& rows) {
  if (table.ndim() < 1) throw std::invalid_argument("take_rows: the table must have rows");
  if (rows.ndim() != 1) throw std::invalid_argument("take_rows: rows must be [M]");
  const int64_t n = table.shape(0), m = rows.shape(0);
  const int64_t width = n ? table.size() / n : 0;  // no rows: any row asked for is out of bounds
  std::vector<int64_t> shape = table.shape();
  shape[0] = m;
  I64Array out = I64Array::empty(shape);
  int64_t* o = out.mutable_data();
  for (int64_t k = 0; k < m; ++k) {
    const int64_t r = row_at(rows, k, n, "take_rows");
    std::copy(table.data() + r * width, table.data() + (r + 1) * width, o + k * width);
  }
  return out;
}

I64Array put_rows(const I64Array& table, const I64Array& rows, const I64Array& values) {
  if (table.ndim() < 1 || rows.ndim() != 1 || values.ndim() != table.ndim() || values.shape(0) != rows.shape(0))
    throw std::invalid_argument("put_rows: values must be [M, ...] for rows [M] of the table");
  const int64_t n = table.shape(0), m = rows.shape(0), width = n ? table.size() / n : 0;
  for (int64_t d = 1; d < table.ndim(); ++d)
    if (values.shape(d) != table.shape(d))
      throw std::invalid_argument("put_rows: values' rows differ from the table's");
  I64Array out = I64Array::empty(table.shape());
  std::copy(table.data(), table.data() + table.size(), out.mutable_data());
  for (int64_t k = 0; k < m; ++k) {
    const int64_t r = row_at(rows, k, n, "put_rows");
    std::copy(values.data() + k * width, values.data() + (k + 1) * width, out.mutable_data() + r * width);
  }
  return out;
}

int64_t first_differing_row(const I64Array& a, const I64Array& b) {
  if (a.shape() != b.shape() || a.ndim() < 1) throw std::invalid_argument("first_differing_row: a and b must be alike");
  const int64_t n = a.shape(0), width = n ? a.size() / n : 0;
  for (int64_t k = 0; k < n; ++k)
    if (!std::equal(a.data() + k * width, a.data() + (k + 1) * width, b.data() + k * width)) return k;
  return -1;
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

I64Array outer_spatial_channels(const I64Array& shapes, int64_t first, int64_t count) {
  check_columns(shapes, first, count, "outer_spatial_channels");
  const int64_t n = shapes.shape(0), width = shapes.shape(1), out_width = count + 2;
  auto out = I64Array::empty({n, out_width});
  for (int64_t i = 0; i < n; ++i) {
    const int64_t* shape = shapes.data() + width * i;
    int64_t* o = out.mutable_data() + out_width * i;
    o[0] = 1, o[out_width - 1] = 1;
    for (int64_t d = 0; d < first; ++d) o[0] *= shape[d];
    for (int64_t d = 0; d < count; ++d) o[1 + d] = shape[first + d];
    for (int64_t d = first + count; d < width; ++d) o[out_width - 1] *= shape[d];
  }
  return out;
}

ArrayOf<double> window_regions(const I64Array& windows) {
  if (windows.ndim() != 2 || windows.shape(1) % 2)
    throw std::invalid_argument("window_regions: windows must be [N, 2K] (anchors, then sizes)");
  const int64_t n = windows.shape(0), width = windows.shape(1), k = width / 2;
  auto out = ArrayOf<double>::empty({n, width});
  const int64_t* w = windows.data();
  double* o = out.mutable_data();
  for (int64_t i = 0; i < n; ++i)
    for (int64_t d = 0; d < k; ++d) {
      o[i * width + d] = double(w[i * width + d]);
      o[i * width + k + d] = double(w[i * width + d] + w[i * width + k + d]);
    }
  return out;
}

}  // namespace penstock
