// idx_dataset.cpp: see idx_dataset.h.
//
// An IDX file is a big-endian header (magic: two zero bytes, a type code
// 0x08 for unsigned bytes, the number of dimensions; then one 32-bit size
// per dimension) followed by the data in row-major order.
#include "idx_dataset.h"

#include <sys/stat.h>
#include <zlib.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>

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
