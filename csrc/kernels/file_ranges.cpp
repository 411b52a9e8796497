// Reading byte ranges of files into one packed buffer, in parallel: members of tar shards
// (readers.webdataset) and other readers whose samples live inside larger files.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "kernels/file_ranges.h"

namespace penstock {
namespace {

struct Fd {
  int fd = -1;
  ~Fd() { if (fd >= 0) ::close(fd); }
};

}  // namespace

// Range i is bytes [offsets[i], offsets[i] + sizes[i]) of paths[i]; it lands at the packed
// position sum(sizes[:i]) of the returned uint8 buffer.
Array read_file_ranges(ThreadPool& pool, const std::vector<std::string>& paths, I64Array offsets, I64Array sizes) {
  int64_t n = static_cast<int64_t>(paths.size());
  if (offsets.shape(0) != n || sizes.shape(0) != n)
    throw std::invalid_argument("read_file_ranges: inconsistent argument sizes");
  const int64_t* off = offsets.data();
  const int64_t* sz = sizes.data();
  std::vector<int64_t> at(n);
  int64_t total = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (off[i] < 0 || sz[i] < 0) throw SampleError(i, "negative offset or size for '" + paths[i] + "'");
    at[i] = total;
    total += sz[i];
  }
  Array out = Array::empty('u', 1, {total}, true);
  uint8_t* base = static_cast<uint8_t*>(out.mutable_data());
  pool.parallel_for(n, [&](int64_t i) {
    if (sz[i] == 0) return;
    Fd f;
    f.fd = ::open(paths[i].c_str(), O_RDONLY | O_CLOEXEC);
    if (f.fd < 0) throw SampleError(i, "cannot open file '" + paths[i] + "': " + std::strerror(errno));
    int64_t done = 0;
    while (done < sz[i]) {
      ssize_t r = ::pread(f.fd, base + at[i] + done, sz[i] - done, off[i] + done);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0)
        throw SampleError(i, "'" + paths[i] + "' ends before byte " + std::to_string(off[i] + sz[i]) +
                                 " (truncated file or stale index)");
      done += r;
    }
  });
  return out;
}

}  // namespace penstock
