// pixel_file.cpp: PixelFile, one mapped copy of a pixel file per machine
// (idx_dataset.h); the format is idx_format.h's.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <tuple>
#include <utility>
#include <vector>

#include "idx_dataset.h"
#include "idx_format.h"

namespace dtrain {

using namespace idx;

namespace {

std::string cache_dir() {
  if (const char* dir = std::getenv("DTRAIN_CACHE"); dir && *dir) return dir;
  if (const char* dir = std::getenv("XDG_CACHE_HOME"); dir && *dir) return std::string(dir) + "/dtrain-kit";
  if (const char* home = std::getenv("HOME"); home && *home) return std::string(home) + "/.cache/dtrain-kit";
  return "/tmp/dtrain-kit-" + std::to_string(::getuid());
}

bool make_dirs(const std::string& dir) {
  for (size_t slash = dir.find('/', 1);; slash = dir.find('/', slash + 1)) {
    const std::string prefix = dir.substr(0, slash);
    if (::mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) return false;
    if (slash == std::string::npos) return is_dir(dir);
  }
}

// The unpacked copy of a gzipped file, made once per machine: the first
// rank to take the lock unpacks it (to a temporary name, then renamed), the
// others find it done. "" when no cache directory can be written.
std::string unpacked_copy(const std::string& gz_path) {
  struct stat st {};
  if (::stat(gz_path.c_str(), &st) != 0) throw DataError(gz_path + ": cannot open: " + std::strerror(errno));
  const std::string dir = cache_dir();
  if (!make_dirs(dir)) return "";
  std::string stem = base_name(gz_path);
  stem = stem.substr(0, stem.size() - 3);
  const std::string path = dir + "/" + stem + "-" + std::to_string(st.st_size) + "-" +
                           std::to_string(static_cast<long long>(st.st_mtime)) + ".idx";
  const int lock = ::open((path + ".lock").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
  if (lock < 0) return "";
  ::flock(lock, LOCK_EX);
  std::string result = path;
  if (!is_file(path)) {
    const std::string tmp = path + ".tmp" + std::to_string(::getpid());
    try {
      IdxReader in(gz_path);
      std::FILE* out = std::fopen(tmp.c_str(), "wb");
      if (!out) {
        result = "";
      } else {
        std::vector<char> buf(1 << 20);
        bool ok = true;
        for (long got; (got = in.read(buf.data(), static_cast<long>(buf.size()))) > 0;)
          ok = ok && std::fwrite(buf.data(), 1, static_cast<size_t>(got), out) == static_cast<size_t>(got);
        ok = std::fclose(out) == 0 && ok;
        if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
          std::remove(tmp.c_str());
          result = "";
        }
      }
    } catch (...) {
      std::remove(tmp.c_str());
      ::flock(lock, LOCK_UN);
      ::close(lock);
      throw;
    }
  }
  ::flock(lock, LOCK_UN);
  ::close(lock);
  return result;
}

}  // namespace

Mapping::Mapping(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw DataError(path + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  ::fstat(fd, &st);
  length_ = static_cast<size_t>(st.st_size);
  if (length_ > 0) data_ = ::mmap(nullptr, length_, PROT_READ, MAP_SHARED, fd, 0);
  const int mmap_errno = errno;
  ::close(fd);
  if (data_ == MAP_FAILED) {
    data_ = nullptr;
    throw DataError(path + ": cannot map: " + std::strerror(mmap_errno));
  }
}

Mapping::~Mapping() {
  if (data_) ::munmap(data_, length_);
}

Mapping::Mapping(Mapping&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), length_(std::exchange(other.length_, 0)) {}

Mapping& Mapping::operator=(Mapping&& other) noexcept {
  if (this != &other) {
    if (data_) ::munmap(data_, length_);
    data_ = std::exchange(other.data_, nullptr);
    length_ = std::exchange(other.length_, 0);
  }
  return *this;
}

PixelFile::PixelFile(const std::string& path, long max_items) {
  const bool gz = path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
  mapped_path_ = gz ? unpacked_copy(path) : path;
  if (mapped_path_.empty()) {
    throw DataError(path + ": cannot unpack it into a cache directory (" + cache_dir() +
                    "); set DTRAIN_CACHE to a writable directory");
  }
  // read_idx_images's checks, on the mapped bytes; a throw unmaps them (RAII).
  const std::string name = base_name(path);
  map_ = Mapping(mapped_path_);
  const auto* bytes = static_cast<const unsigned char*>(map_.data());
  const long length = static_cast<long>(map_.length());
  const IdxHeader h = parse_header(IdxKind::Images, bytes, std::min(length, header_bytes(IdxKind::Images)), name);
  const long payload = length - header_bytes(IdxKind::Images);
  require_payload(h, h.items, payload, name);
  reject_trailing(payload - h.items * h.item_bytes(), name);
  rows_ = max_items < 0 ? h.items : std::min(h.items, max_items);
  cols_ = h.item_bytes();
  pixels_ = bytes + header_bytes(IdxKind::Images);
}

Pixels PixelFile::take(const Eigen::Ref<const Eigen::VectorXi>& index) const {
  Pixels out(index.size(), cols_);
  for (Eigen::Index i = 0; i < index.size(); ++i) {
    const long row = index(i);
    if (row < 0 || row >= rows_)
      throw std::out_of_range("PixelFile::take: row " + std::to_string(row) + " of " + std::to_string(rows_));
    std::memcpy(out.row(i).data(), pixels_ + row * cols_, static_cast<size_t>(cols_));
  }
  return out;
}

SharedDataset open_dataset(const std::string& flag_dir, long max_train, long max_test) {
  SharedDataset data;
  data.dir = find_data_dir(flag_dir);
  data.train_x = PixelFile(idx_file(data.dir, kStems[0]), max_train);
  data.train_y = read_idx_labels(idx_file(data.dir, kStems[1]), max_train);
  data.test_x = PixelFile(idx_file(data.dir, kStems[2]), max_test);
  data.test_y = read_idx_labels(idx_file(data.dir, kStems[3]), max_test);
  for (const auto& [x, y, stem] : {std::tuple{&data.train_x, &data.train_y, 0}, std::tuple{&data.test_x, &data.test_y, 2}})
    check_split(data.dir, stem, x->rows(), x->cols(), y->size());
  return data;
}

}  // namespace dtrain
