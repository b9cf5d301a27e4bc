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
constexpr long kPixels = 28 * 28;  // what the model's first layer takes (layers.h: kFeatures)
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

std::uint32_t be32(const unsigned char* b) {
  return (std::uint32_t(b[0]) << 24) | (std::uint32_t(b[1]) << 16) | (std::uint32_t(b[2]) << 8) | b[3];
}

// The header of an IDX file, checked. Both loaders read it this way: the
// stream reader from the first bytes it reads, the mapped file from memory.
enum class IdxKind { Images, Labels };

struct IdxHeader {
  IdxKind kind = IdxKind::Images;
  long items = 0;
  long rows = 1, cols = 1;  // of one image (1 and 1 for a label)
  long item_bytes() const { return rows * cols; }
  std::string what() const {  // "images of 28x28", "labels"
    return kind == IdxKind::Labels ? "labels" : "images of " + std::to_string(rows) + "x" + std::to_string(cols);
  }
};

long header_bytes(IdxKind kind) { return kind == IdxKind::Images ? 16 : 8; }

// Parses the first `available` bytes of the file `name` (header_bytes of them, or fewer).
IdxHeader parse_header(IdxKind kind, const unsigned char* bytes, long available, const std::string& name) {
  static const char* const kFields[] = {"magic number", "image count", "row count", "column count"};
  auto require = [&](long bytes_needed) {  // the magic first: a short file of the other kind says so
    if (available >= bytes_needed) return;
    const long field = available / 4;
    const char* missing = kind == IdxKind::Labels && field == 1 ? "label count" : kFields[field];
    throw DataError(name + ": truncated header (no " + missing + ")");
  };
  require(4);
  const std::uint32_t expected = kind == IdxKind::Images ? kImagesMagic : kLabelsMagic;
  const std::uint32_t magic = be32(bytes);
  if (magic != expected) {
    std::string hint;
    if (kind == IdxKind::Images && magic == kLabelsMagic) hint = " (this is a labels file, not images)";
    if (kind == IdxKind::Labels && magic == kImagesMagic) hint = " (this is an images file, not labels)";
    throw DataError(name + ": not an IDX " + (kind == IdxKind::Images ? "images" : "labels") + " file: magic number " +
                    hex(magic) + ", expected " + hex(expected) + hint);
  }
  require(header_bytes(kind));
  IdxHeader h;
  h.kind = kind;
  h.items = be32(bytes + 4);
  if (kind == IdxKind::Images) {
    h.rows = be32(bytes + 8);
    h.cols = be32(bytes + 12);
    if (h.rows == 0 || h.cols == 0)
      throw DataError(name + ": images of " + std::to_string(h.rows) + "x" + std::to_string(h.cols));
  }
  if (h.items * h.item_bytes() > kMaxBytes)
    throw DataError(name + ": header promises " + std::to_string(h.items) + " " + h.what() + ", more than this kit reads");
  return h;
}

// The payload of `items` items must be there: `available` bytes of it are.
void require_payload(const IdxHeader& h, long items, long available, const std::string& name) {
  const long needed = items * h.item_bytes();
  if (available >= needed) return;
  std::ostringstream msg;
  msg << name << ": truncated: header promises " << items << " " << h.what() << " (" << needed << " bytes), file has "
      << available << " bytes of them";
  throw DataError(msg.str());
}

void reject_trailing(long extra, const std::string& name) {
  if (extra > 0) throw DataError(name + ": " + std::to_string(extra) + " unexpected bytes after the data the header promises");
}

// A split's images and labels agree, and the images are what the model takes.
void check_split(const std::string& dir, int stem, long images, long pixels, long labels) {
  if (images != labels)
    throw DataError(dir + ": " + kStems[stem] + " has " + std::to_string(images) + " images but " + kStems[stem + 1] +
                    " has " + std::to_string(labels) + " labels");
  if (pixels != kPixels)
    throw DataError(dir + ": " + kStems[stem] + " holds images of " + std::to_string(pixels) +
                    " pixels; the model needs 28x28 = " + std::to_string(kPixels));
}

IdxHeader read_header(IdxReader& in, IdxKind kind) {
  unsigned char bytes[16];
  const long got = in.read(bytes, header_bytes(kind));
  return parse_header(kind, bytes, got, in.name());
}

// The first `keep` items' payload; when that is all of them, nothing may follow.
std::vector<unsigned char> read_payload(IdxReader& in, const IdxHeader& h, long keep) {
  std::vector<unsigned char> bytes(static_cast<size_t>(keep * h.item_bytes()));
  require_payload(h, keep, in.read(bytes.data(), static_cast<long>(bytes.size())), in.name());
  if (keep == h.items) reject_trailing(in.trailing_bytes(), in.name());
  return bytes;
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
  const IdxHeader h = read_header(in, IdxKind::Images);
  const long keep = max_items < 0 ? h.items : std::min(h.items, max_items);
  const auto bytes = read_payload(in, h, keep);
  using Bytes = Eigen::Matrix<unsigned char, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  return Eigen::Map<const Bytes>(bytes.data(), keep, h.item_bytes()).cast<double>() / 255.0;  // one pass
}

Labels read_idx_labels(const std::string& path, long max_items) {
  IdxReader in(path);
  const IdxHeader h = read_header(in, IdxKind::Labels);
  const long keep = max_items < 0 ? h.items : std::min(h.items, max_items);
  const auto bytes = read_payload(in, h, keep);
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
  for (const auto& [split, stem] : {std::pair{&data.train, 0}, std::pair{&data.test, 2}})
    check_split(data.dir, stem, split->x.rows(), split->x.cols(), split->y.size());
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
  for (const auto& [x, y, stem] : {std::tuple{&data.train_x, &data.train_y, 0}, std::tuple{&data.test_x, &data.test_y, 2}})
    check_split(data.dir, stem, x->rows(), x->cols(), y->size());
  return data;
}

}  // namespace dtrain
