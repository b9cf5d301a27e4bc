// idx_dataset.cpp: see idx_dataset.h.
//
// An IDX file is a big-endian header (magic: two zero bytes, a type code
// 0x08 for unsigned bytes, the number of dimensions; then one 32-bit size
// per dimension) followed by the data in row-major order.
#include "idx_dataset.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>
#include <tuple>
#include <utility>

namespace dtrain {

namespace {

constexpr std::uint32_t kImagesMagic = 0x00000803, kLabelsMagic = 0x00000801;
constexpr long kMaxBytes = 1L << 31;
const char* const kStems[4] = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
                               "t10k-labels-idx1-ubyte"};

std::string base_name(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Reads a file, plain or gzipped, through one interface: zlib's gz* calls
// read plain files unchanged.
class IdxReader {
 public:
  explicit IdxReader(const std::string& path) : path_(path), name_(base_name(path)) {
    errno = 0;
    file_ = gzopen(path.c_str(), "rb");
    if (!file_)
      throw DataError(path + ": cannot open: " + (errno ? std::strerror(errno) : "out of memory"));
    gzbuffer(file_, 1 << 17);
  }
  ~IdxReader() {
    if (file_) gzclose(file_);
  }
  IdxReader(const IdxReader&) = delete;
  IdxReader& operator=(const IdxReader&) = delete;

  // Reads up to n bytes; returns how many there were.
  long read(void* out, long n) {
    long done = 0;
    while (done < n) {
      const unsigned chunk = static_cast<unsigned>(std::min(n - done, 1L << 30));
      const int got = gzread(file_, static_cast<char*>(out) + done, chunk);
      if (got < 0) {
        int code = 0;
        const char* text = gzerror(file_, &code);
        throw DataError(path_ + ": not readable as " + (ends_with_gz() ? "gzip" : "a file") + ": " + text);
      }
      if (got == 0) break;
      done += got;
    }
    return done;
  }

  std::uint32_t read_u32(const char* what) {
    unsigned char b[4];
    if (read(b, 4) != 4) throw DataError(name_ + ": truncated header (no " + what + ")");
    return (std::uint32_t(b[0]) << 24) | (std::uint32_t(b[1]) << 16) | (std::uint32_t(b[2]) << 8) | b[3];
  }

  // Counts what is left after the data the header promised.
  long trailing_bytes() {
    char buf[4096];
    long total = 0;
    for (long got; (got = read(buf, sizeof buf)) > 0;) total += got;
    return total;
  }

  bool ends_with_gz() const { return path_.size() > 3 && path_.compare(path_.size() - 3, 3, ".gz") == 0; }
  const std::string& name() const { return name_; }

 private:
  std::string path_, name_;
  gzFile file_ = nullptr;
};

std::string hex(std::uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

void check_magic(IdxReader& in, std::uint32_t expected) {
  const std::uint32_t magic = in.read_u32("magic number");
  if (magic == expected) return;
  std::string hint;
  if (expected == kImagesMagic && magic == kLabelsMagic) hint = " (this is a labels file, not images)";
  if (expected == kLabelsMagic && magic == kImagesMagic) hint = " (this is an images file, not labels)";
  throw DataError(in.name() + ": not an IDX " + (expected == kImagesMagic ? "images" : "labels") +
                  " file: magic number " + hex(magic) + ", expected " + hex(expected) + hint);
}

// Reads `count` bytes of payload, or explains the truncation.
std::vector<unsigned char> read_payload(IdxReader& in, long count, long items, const std::string& what) {
  std::vector<unsigned char> bytes(static_cast<size_t>(count));
  const long got = in.read(bytes.data(), count);
  if (got != count) {
    std::ostringstream msg;
    msg << in.name() << ": truncated: header promises " << items << " " << what << " (" << count << " bytes), file has "
        << got << " bytes of them";
    throw DataError(msg.str());
  }
  return bytes;
}

void reject_trailing(IdxReader& in) {
  if (const long extra = in.trailing_bytes(); extra > 0)
    throw DataError(in.name() + ": " + std::to_string(extra) + " unexpected bytes after the data the header promises");
}

bool is_dir(const std::string& path) {
  struct stat st{};
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool is_file(const std::string& path) {
  struct stat st{};
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::vector<std::string> missing_files(const std::string& dir) {
  std::vector<std::string> missing;
  for (const char* stem : kStems)
    if (idx_file(dir, stem).empty()) missing.push_back(stem);
  return missing;
}

std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : sep) + p;
  return out;
}

// A directory the user named must hold the data; say exactly what is wrong.
void require_complete(const std::string& dir, const std::string& named_by) {
  if (!is_dir(dir)) throw DataError(named_by + " names " + dir + ", which is not a directory");
  const auto missing = missing_files(dir);
  if (!missing.empty())
    throw DataError(named_by + " names " + dir + ", which lacks " + join(missing, ", ") + " (plain or .gz)");
}

}  // namespace

Matrix read_idx_images(const std::string& path, long max_items) {
  IdxReader in(path);
  check_magic(in, kImagesMagic);
  const long items = in.read_u32("image count"), rows = in.read_u32("row count"), cols = in.read_u32("column count");
  if (rows == 0 || cols == 0) throw DataError(in.name() + ": images of " + std::to_string(rows) + "x" + std::to_string(cols));
  if (items * rows * cols > kMaxBytes)
    throw DataError(in.name() + ": header promises " + std::to_string(items) + " images of " + std::to_string(rows) +
                    "x" + std::to_string(cols) + ", more than this kit reads");
  const long keep = max_items < 0 ? items : std::min(items, max_items);
  const std::string what = "images of " + std::to_string(rows) + "x" + std::to_string(cols);
  const auto bytes = read_payload(in, (keep == items ? items : keep) * rows * cols, keep == items ? items : keep, what);
  if (keep == items) reject_trailing(in);
  using Bytes = Eigen::Matrix<unsigned char, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  return Eigen::Map<const Bytes>(bytes.data(), keep, rows * cols).cast<double>() / 255.0;  // one pass
}

Labels read_idx_labels(const std::string& path, long max_items) {
  IdxReader in(path);
  check_magic(in, kLabelsMagic);
  const long items = in.read_u32("label count");
  if (items > kMaxBytes) throw DataError(in.name() + ": header promises " + std::to_string(items) + " labels, more than this kit reads");
  const long keep = max_items < 0 ? items : std::min(items, max_items);
  const auto bytes = read_payload(in, keep, keep, "labels");
  if (keep == items) reject_trailing(in);
  Labels y(keep);
  for (long i = 0; i < keep; ++i) {
    if (bytes[static_cast<size_t>(i)] > 9)
      throw DataError(in.name() + ": label " + std::to_string(i) + " is " + std::to_string(bytes[static_cast<size_t>(i)]) +
                      ", expected a class id 0..9");
    y(i) = bytes[static_cast<size_t>(i)];
  }
  return y;
}

std::vector<std::string> data_search_path(const std::string& flag_dir) {
  std::vector<std::string> dirs;
  if (!flag_dir.empty()) dirs.push_back(flag_dir);
  if (const char* env = std::getenv("DTRAIN_DATA"); env && *env) dirs.push_back(env);
  dirs.push_back(std::string(DTRAIN_KIT_DIR) + "/data");
  dirs.push_back("/usr/share/datasets/fashion-mnist");
  return dirs;
}

std::string idx_file(const std::string& dir, const std::string& stem) {
  for (const std::string& name : {dir + "/" + stem, dir + "/" + stem + ".gz"})
    if (is_file(name)) return name;
  return "";
}

std::string find_data_dir(const std::string& flag_dir) {
  if (!flag_dir.empty()) {
    require_complete(flag_dir, "--data");
    return flag_dir;
  }
  if (const char* env = std::getenv("DTRAIN_DATA"); env && *env) {
    require_complete(env, "DTRAIN_DATA");
    return env;
  }
  return first_complete_dir(data_search_path(""));
}

std::string first_complete_dir(const std::vector<std::string>& places) {
  std::vector<std::string> looked;
  for (const std::string& dir : places) {
    if (!is_dir(dir)) {
      looked.push_back(dir + " (no such directory)");
      continue;
    }
    const auto missing = missing_files(dir);
    if (missing.empty()) return dir;
    if (missing.size() < 4)
      throw DataError(dir + " holds part of a data set: " + join(missing, ", ") + " (plain or .gz) missing");
    looked.push_back(dir + " (no IDX files)");
  }
  throw DataError("no data set found. Looked in:\n  " + join(looked, "\n  ") +
                  "\nInstall the default one with:  sudo apt-get install dataset-fashion-mnist\n"
                  "(or put the four MNIST IDX files, plain or .gz, in " + std::string(DTRAIN_KIT_DIR) +
                  "/data/, or name a directory with --data DIR or DTRAIN_DATA)");
}

Dataset load_dataset(const std::string& flag_dir, long max_train, long max_test) {
  Dataset data;
  data.dir = find_data_dir(flag_dir);
  data.train.x = read_idx_images(idx_file(data.dir, kStems[0]), max_train);
  data.train.y = read_idx_labels(idx_file(data.dir, kStems[1]), max_train);
  data.test.x = read_idx_images(idx_file(data.dir, kStems[2]), max_test);
  data.test.y = read_idx_labels(idx_file(data.dir, kStems[3]), max_test);
  for (const auto& [split, stem] : {std::pair{&data.train, 0}, std::pair{&data.test, 2}}) {
    if (split->x.rows() != split->y.size())
      throw DataError(data.dir + ": " + kStems[stem] + " has " + std::to_string(split->x.rows()) + " images but " +
                      kStems[stem + 1] + " has " + std::to_string(split->y.size()) + " labels");
    if (split->x.cols() != 784)
      throw DataError(data.dir + ": " + kStems[stem] + " holds images of " + std::to_string(split->x.cols()) +
                      " pixels; the model needs 28x28 = 784");
  }
  return data;
}

}  // namespace dtrain

// ---- PixelFile: one mapped copy per machine ----

namespace dtrain {

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

std::uint32_t be32(const unsigned char* b) {
  return (std::uint32_t(b[0]) << 24) | (std::uint32_t(b[1]) << 16) | (std::uint32_t(b[2]) << 8) | b[3];
}

}  // namespace

PixelFile::PixelFile(const std::string& path, long max_items) {
  const bool gz = path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
  mapped_path_ = gz ? unpacked_copy(path) : path;
  if (mapped_path_.empty()) {
    throw DataError(path + ": cannot unpack it into a cache directory (" + cache_dir() +
                    "); set DTRAIN_CACHE to a writable directory");
  }
  const std::string name = base_name(path);
  const int fd = ::open(mapped_path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw DataError(path + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  ::fstat(fd, &st);
  length_ = static_cast<size_t>(st.st_size);
  if (length_ < 16) {
    ::close(fd);
    throw DataError(name + ": truncated header (" + std::to_string(length_) + " bytes)");
  }
  map_ = ::mmap(nullptr, length_, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (map_ == MAP_FAILED) {
    map_ = nullptr;
    throw DataError(path + ": cannot map: " + std::strerror(errno));
  }
  const auto* bytes = static_cast<const unsigned char*>(map_);
  const std::uint32_t magic = be32(bytes);
  if (magic != kImagesMagic)
    throw DataError(name + ": not an IDX images file: magic number " + hex(magic) + ", expected " + hex(kImagesMagic) +
                    (magic == kLabelsMagic ? " (this is a labels file, not images)" : ""));
  const long items = be32(bytes + 4), height = be32(bytes + 8), width = be32(bytes + 12);
  if (height == 0 || width == 0)
    throw DataError(name + ": images of " + std::to_string(height) + "x" + std::to_string(width));
  const long payload = static_cast<long>(length_) - 16;
  if (items * height * width > payload)
    throw DataError(name + ": truncated: header promises " + std::to_string(items) + " images of " +
                    std::to_string(height) + "x" + std::to_string(width) + " (" + std::to_string(items * height * width) +
                    " bytes), file has " + std::to_string(payload) + " bytes of them");
  if (items * height * width < payload)
    throw DataError(name + ": " + std::to_string(payload - items * height * width) +
                    " unexpected bytes after the data the header promises");
  rows_ = max_items < 0 ? items : std::min(items, max_items);
  cols_ = height * width;
  pixels_ = bytes + 16;
}

PixelFile::~PixelFile() {
  if (map_) ::munmap(map_, length_);
}

PixelFile::PixelFile(PixelFile&& other) noexcept { *this = std::move(other); }

PixelFile& PixelFile::operator=(PixelFile&& other) noexcept {
  if (this != &other) {
    if (map_) ::munmap(map_, length_);
    map_ = std::exchange(other.map_, nullptr);
    length_ = std::exchange(other.length_, 0);
    pixels_ = std::exchange(other.pixels_, nullptr);
    rows_ = std::exchange(other.rows_, 0);
    cols_ = std::exchange(other.cols_, 0);
    mapped_path_ = std::move(other.mapped_path_);
  }
  return *this;
}

Matrix PixelFile::take(const Eigen::Ref<const Eigen::VectorXi>& index) const {
  using Bytes = Eigen::Matrix<unsigned char, 1, Eigen::Dynamic>;
  Matrix out(index.size(), cols_);
  for (Eigen::Index i = 0; i < index.size(); ++i) {
    const long row = index(i);
    if (row < 0 || row >= rows_)
      throw std::out_of_range("PixelFile::take: row " + std::to_string(row) + " of " + std::to_string(rows_));
    out.row(i) = Eigen::Map<const Bytes>(pixels_ + row * cols_, cols_).cast<double>() / 255.0;
  }
  return out;
}

void PixelFile::copy_rows(long start, long n, Matrix& out) const {
  using Bytes = Eigen::Matrix<unsigned char, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  if (start < 0 || n < 0 || start + n > rows_)
    throw std::out_of_range("PixelFile::copy_rows: rows " + std::to_string(start) + ".." + std::to_string(start + n) +
                            " of " + std::to_string(rows_));
  out = Eigen::Map<const Bytes>(pixels_ + start * cols_, n, cols_).cast<double>() / 255.0;
}

SharedDataset open_dataset(const std::string& flag_dir, long max_train, long max_test) {
  SharedDataset data;
  data.dir = find_data_dir(flag_dir);
  data.train_x = PixelFile(idx_file(data.dir, kStems[0]), max_train);
  data.train_y = read_idx_labels(idx_file(data.dir, kStems[1]), max_train);
  data.test_x = PixelFile(idx_file(data.dir, kStems[2]), max_test);
  data.test_y = read_idx_labels(idx_file(data.dir, kStems[3]), max_test);
  for (const auto& [x, y, stem] : {std::tuple{&data.train_x, &data.train_y, 0}, std::tuple{&data.test_x, &data.test_y, 2}}) {
    if (x->rows() != y->size())
      throw DataError(data.dir + ": " + kStems[stem] + " has " + std::to_string(x->rows()) + " images but " +
                      kStems[stem + 1] + " has " + std::to_string(y->size()) + " labels");
    if (x->cols() != 784)
      throw DataError(data.dir + ": " + kStems[stem] + " holds images of " + std::to_string(x->cols()) +
                      " pixels; the model needs 28x28 = 784");
  }
  return data;
}

}  // namespace dtrain
