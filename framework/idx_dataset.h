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
// reads all; otherwise the first min(max_items, N).
Matrix read_idx_images(const std::string& path, long max_items = -1);
// One IDX file of unsigned-byte labels (magic 0x00000801) -> (N).
Labels read_idx_labels(const std::string& path, long max_items = -1);

std::vector<std::string> data_search_path(const std::string& flag_dir);
// The path of `stem` in `dir`, plain or with ".gz" (plain first); "" when absent.
std::string idx_file(const std::string& dir, const std::string& stem);
// The first directory of the search path holding all four files. A directory
// named by the flag or the variable must have them (no silent fallback).
std::string find_data_dir(const std::string& flag_dir);
// The first of `places` holding all four files, or a DataError that lists
// every place and the command that installs the default set.
std::string first_complete_dir(const std::vector<std::string>& places);
Dataset load_dataset(const std::string& flag_dir, long max_train = -1, long max_test = -1);

}  // namespace dtrain
