// Reading whole files into one packed batch buffer, in parallel: the readers' hot path.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "kernels/file_io.h"

namespace penstock {
namespace {

struct Fd {
  int fd = -1;
  ~Fd() { if (fd >= 0) ::close(fd); }
};

}  // namespace

// Returns (buffer uint8 [total], sizes int64 [N]); sample i is buffer[offset_i : offset_i + size_i].
std::tuple<ArrayOf<uint8_t>, I64Array> read_files(ThreadPool& pool, const std::vector<std::string>& paths) {
  int64_t n = static_cast<int64_t>(paths.size());
  std::vector<int64_t> sizes(n, 0);
  pool.parallel_for(n, [&](int64_t i) {
    struct stat st;
    if (::stat(paths[i].c_str(), &st) != 0)
      throw SampleError(i, "cannot open file '" + paths[i] + "': " + std::strerror(errno));
    if (!S_ISREG(st.st_mode)) throw SampleError(i, "'" + paths[i] + "' is not a regular file");
    sizes[i] = st.st_size;
  });
  int64_t total = 0;
  std::vector<int64_t> offsets(n);
  for (int64_t i = 0; i < n; ++i) {
    offsets[i] = total;
    total += sizes[i];
  }
  // From the host pool: a batch of files is hundreds of KB, and glibc, given such a block to map and
  // free every iteration, raises its mmap and trim thresholds past it and keeps that much free memory
  // in each reader thread's arena (a soak's RSS swung by 10-20 MB).
  auto buffer = ArrayOf<uint8_t>::empty({total}, true);
  auto sizes_out = I64Array::empty({n});
  std::memcpy(sizes_out.mutable_data(), sizes.data(), n * sizeof(int64_t));
  uint8_t* base = buffer.mutable_data();
  pool.parallel_for(n, [&](int64_t i) {
    Fd f;
    f.fd = ::open(paths[i].c_str(), O_RDONLY | O_CLOEXEC);
    if (f.fd < 0) throw SampleError(i, "cannot open file '" + paths[i] + "': " + std::strerror(errno));
    int64_t done = 0;
    while (done < sizes[i]) {
      ssize_t r = ::pread(f.fd, base + offsets[i] + done, sizes[i] - done, done);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0)
        throw SampleError(i, "cannot read file '" + paths[i] + "' (size changed or I/O error)");
      done += r;
    }
  });
  return {buffer, sizes_out};
}

std::tuple<ArrayOf<uint8_t>, I64Array> read_listed_files(ThreadPool& pool, const FileList& files,
                                                         const I64Array& indices) {
  std::vector<std::string> paths;
  paths.reserve(indices.size());
  for (int64_t k = 0; k < indices.size(); ++k) {
    int64_t i = indices.data()[k];
    if (i < 0 || i >= int64_t(files.paths.size()))
      throw std::out_of_range("file index " + std::to_string(i) + " is out of range for a list of " +
                              std::to_string(files.paths.size()) + " files");
    paths.push_back(files.paths[i]);
  }
  return read_files(pool, paths);
}

}  // namespace penstock
