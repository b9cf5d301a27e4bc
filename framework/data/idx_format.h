// idx_format.h: the IDX file format, as both loaders read it (the stream
// loader of idx_dataset.cpp, the mapped PixelFile of pixel_file.cpp): one
// header parser, one set of length checks, one reader of plain or gzipped
// files. Internal to the framework's data code.
//
// An IDX file is a big-endian header (magic: two zero bytes, a type code
// 0x08 for unsigned bytes, the number of dimensions; then one 32-bit size
// per dimension) followed by the data in row-major order.
#pragma once

#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include "idx_dataset.h"

namespace dtrain::idx {

inline constexpr long kPixels = 28 * 28;  // what the model's first layer takes (layers.h: kFeatures)
inline constexpr const char* kStems[4] = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                                          "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"};

std::string base_name(const std::string& path);
// A descriptor of `path` for reading from its start: a copy of the one
// keep_data_files_open kept (idx_dataset.h), or else the file opened now; -1
// with errno set when neither.
int open_for_reading(const std::string& path);
bool is_dir(const std::string& path);
bool is_file(const std::string& path);

// Reads a file, plain or gzipped, through one interface: zlib's gz* calls
// read plain files unchanged.
class IdxReader {
 public:
  explicit IdxReader(const std::string& path) : path_(path), name_(base_name(path)) {
    errno = 0;
    const int fd = open_for_reading(path);
    if (fd < 0) throw DataError(path + ": cannot open: " + std::strerror(errno));
    file_ = gzdopen(fd, "rb");
    if (!file_) {
      ::close(fd);
      throw DataError(path + ": cannot open: out of memory");
    }
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

enum class IdxKind { Images, Labels };

// The header of an IDX file, checked.
struct IdxHeader {
  IdxKind kind = IdxKind::Images;
  long items = 0;
  long rows = 1, cols = 1;  // of one image (1 and 1 for a label)
  long item_bytes() const { return rows * cols; }
  std::string what() const {  // "images of 28x28", "labels"
    return kind == IdxKind::Labels ? "labels" : "images of " + std::to_string(rows) + "x" + std::to_string(cols);
  }
};

inline long header_bytes(IdxKind kind) { return kind == IdxKind::Images ? 16 : 8; }

// Parses the first `available` bytes of the file `name` (header_bytes of them, or fewer).
IdxHeader parse_header(IdxKind kind, const unsigned char* bytes, long available, const std::string& name);
// The payload of `items` items must be there: `available` bytes of it are.
void require_payload(const IdxHeader& h, long items, long available, const std::string& name);
// Nothing may follow the data the header promises.
void reject_trailing(long extra, const std::string& name);
// A split's images and labels agree, and the images are what the model takes.
void check_split(const std::string& dir, int stem, long images, long pixels, long labels);

}  // namespace dtrain::idx
