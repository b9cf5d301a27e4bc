// idx_dataset.h: the training data, read from IDX files (the MNIST format,
// which Fashion-MNIST shares), plain or gzipped.
//
// Where the files are looked for, in order (data_search_path):
//   1. the --data DIR flag of a program,
//   2. the DTRAIN_DATA environment variable,
//   3. data/ in the kit (drop real MNIST files there to use them instead),
//   4. /usr/share/datasets/fashion-mnist (sudo apt-get install dataset-fashion-mnist).
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "tensor.h"

namespace dtrain {

// Every problem with the data: the message names the file or directory and what is wrong.
class DataError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct DataSplit {
  Matrix x;  // (N, 784), pixels scaled to [0, 1]
  Labels y;  // (N), class ids 0..9
};

struct Dataset {
  DataSplit train, test;
  std::string dir;  // where the files were found
};

// One IDX file of unsigned-byte images (magic 0x00000803) -> (N, rows*cols),
// values / 255. A name ending in ".gz" is read through zlib. max_items < 0
// reads all; otherwise min(max_items, N) items. The items start at
// first_item (which must exist): a rank can read its own rows alone.
Matrix read_idx_images(const std::string& path, long max_items = -1, long first_item = 0);
// One IDX file of unsigned-byte labels (magic 0x00000801) -> (N).
Labels read_idx_labels(const std::string& path, long max_items = -1, long first_item = 0);

std::vector<std::string> data_search_path(const std::string& flag_dir);
// The kit's top folder, defined by a file CMake writes (build/generated/kit_dir.cpp).
const char* kit_dir();
// The path of `stem` in `dir`, plain or with ".gz" (plain first); "" when absent.
std::string idx_file(const std::string& dir, const std::string& stem);
// The first directory of the search path holding all four files. A directory
// named by the flag or the variable must have them (no silent fallback).
std::string find_data_dir(const std::string& flag_dir);
// The first of `places` holding all four files, or a DataError that lists
// every place and the command that installs the default set.
std::string first_complete_dir(const std::vector<std::string>& places);
// The training rows [first_train, first_train + max_train) and the first max_test test rows.
Dataset load_dataset(const std::string& flag_dir, long max_train = -1, long max_test = -1, long first_train = 0);
// Opens the files of find_data_dir("") now and keeps them, so that
// load_dataset("") still reads them once the process may open no file (the
// test harness's system-call filter, platform.h). Quiet when there is no
// data set: load_dataset says so when a case asks for it.
void keep_data_files_open();

// ---- one copy per machine, for the trainers ----
//
// The pixels of an IDX images file, mapped read-only: every rank of a
// machine shares one copy in the page cache, and converts to doubles only
// the rows it asks for. A plain file is mapped as it is; a gzipped one is
// unpacked once per machine into a cache file (under $DTRAIN_CACHE,
// $XDG_CACHE_HOME/dtrain-kit or ~/.cache/dtrain-kit; a lock makes one rank
// unpack while the others wait) and that is mapped.
// A file mapped read-only, unmapped when it goes (also when a constructor
// that holds one throws).
class Mapping {
 public:
  Mapping() = default;
  explicit Mapping(const std::string& path);
  ~Mapping();
  Mapping(Mapping&& other) noexcept;
  Mapping& operator=(Mapping&& other) noexcept;
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  const void* data() const { return data_; }
  size_t length() const { return length_; }

 private:
  void* data_ = nullptr;
  size_t length_ = 0;
};

// The pixels of IDX images as their bytes: (N, 784), row-major. An eighth of
// the doubles' memory: what a process with little room keeps (the driven
// harness), converting the rows it uses as it uses them.
using Pixels = Eigen::Matrix<unsigned char, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Converts `count` pixel bytes to doubles in [0, 1] (byte / 255): the one formula every
// reader of images uses. A table of the 256 quotients: the same values as
// dividing, without a division per pixel (a batch converts 47,000 each step).
void pixels_to_unit(const unsigned char* bytes, long count, double* out);

class PixelFile {
 public:
  PixelFile() = default;
  // The first max_items images (all if < 0), checked as read_idx_images checks them.
  PixelFile(const std::string& path, long max_items = -1);

  long rows() const { return rows_; }
  long cols() const { return cols_; }
  // Rows index[0..n) as their bytes: (n, cols()), in that order (a
  // RowSource converts them a batch at a time, an eighth of the doubles'
  // memory and of the bytes a shuffled batch reads).
  Pixels take(const Eigen::Ref<const Eigen::VectorXi>& index) const;
  const std::string& mapped_path() const { return mapped_path_; }  // the file or its unpacked copy
  const unsigned char* bytes() const { return pixels_; }             // (rows(), cols()), row-major

 private:
  Mapping map_;
  const unsigned char* pixels_ = nullptr;  // into map_
  long rows_ = 0, cols_ = 0;
  std::string mapped_path_;
};

struct SharedDataset {
  PixelFile train_x, test_x;  // (N, 784) and (M, 784), as bytes
  Labels train_y, test_y;
  std::string dir;
};
SharedDataset open_dataset(const std::string& flag_dir, long max_train = -1, long max_test = -1);

// As read_idx_images, kept as bytes.
Pixels read_idx_pixels(const std::string& path, long max_items = -1, long first_item = 0);
struct PixelDataset {
  Pixels train_x, test_x;
  Labels train_y, test_y;
  std::string dir;
};
// As load_dataset, the images kept as bytes.
PixelDataset load_pixels(const std::string& flag_dir, long max_train, long max_test, long first_train = 0);

// The rows a training or evaluation pass reads: a Matrix, or images' bytes
// (a PixelFile, Pixels) converted a row or a chunk at a time. A view: what
// it names must outlive it.
class RowSource {
 public:
  RowSource(const Matrix& m) : matrix_(&m) {}  // NOLINT: a Matrix is a row source as it is
  RowSource(const PixelFile& p) : bytes_(p.bytes()), rows_(p.rows()), cols_(p.cols()) {}  // NOLINT
  RowSource(const Pixels& p) : bytes_(p.data()), rows_(p.rows()), cols_(p.cols()) {}      // NOLINT
  long rows() const { return matrix_ ? static_cast<long>(matrix_->rows()) : rows_; }
  long cols() const { return matrix_ ? static_cast<long>(matrix_->cols()) : cols_; }
  // Rows [start, start + n) into out (resized to (n, cols())).
  void copy_rows(long start, long n, Matrix& out) const {
    check(start, n);
    if (matrix_) {
      out = matrix_->middleRows(start, n);
    } else {
      out.resize(n, cols_);
      pixels_to_unit(bytes_ + start * cols_, n * cols_, out.data());
    }
  }
  // Rows [start, start + n) as doubles: (n, cols()).
  Matrix rows(long start, long n) const {
    Matrix out;
    copy_rows(start, n, out);
    return out;
  }
  // Row `row` into row `into` of out, which has cols() columns.
  void copy_row(long row, Matrix& out, long into) const {
    check(row, 1);
    if (matrix_) {
      out.row(into) = matrix_->row(row);
    } else {
      pixels_to_unit(bytes_ + row * cols_, cols_, out.row(into).data());  // a row of a row-major matrix
    }
  }

 private:
  void check(long start, long n) const {
    if (start < 0 || n < 0 || start + n > rows())
      throw std::out_of_range("rows " + std::to_string(start) + ".." + std::to_string(start + n) + " of " +
                              std::to_string(rows()));
  }
  const Matrix* matrix_ = nullptr;
  const unsigned char* bytes_ = nullptr;
  long rows_ = 0, cols_ = 0;
};

}  // namespace dtrain
