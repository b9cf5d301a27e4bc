// idx_dataset.cpp: the stream loader and the data set's search (idx_dataset.h);
// the format is idx_format.h's.
#include "idx_dataset.h"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include "idx_format.h"

namespace dtrain {

using namespace idx;

namespace {

IdxHeader read_header(IdxReader& in, IdxKind kind) {
  unsigned char bytes[16];
  const long got = in.read(bytes, header_bytes(kind));
  return parse_header(kind, bytes, got, in.name());
}

// Items [first, first + keep)'s payload; when that ends at the last item, nothing may follow.
std::vector<unsigned char> read_payload(IdxReader& in, const IdxHeader& h, long first, long keep) {
  if (first < 0 || first > h.items)
    throw DataError(in.name() + ": holds " + std::to_string(h.items) + " items, so none starts at " +
                    std::to_string(first));
  long got = 0;
  if (first > 0) {  // gzip can't seek: read past the items before ours, a block at a time
    std::vector<unsigned char> scratch(static_cast<size_t>(std::min(first, 1024L) * h.item_bytes()));
    for (long left = first * h.item_bytes(), n = 1; left > 0 && n > 0; left -= n, got += n)
      n = in.read(scratch.data(), std::min(left, static_cast<long>(scratch.size())));
  }
  std::vector<unsigned char> bytes(static_cast<size_t>(keep * h.item_bytes()));
  got += in.read(bytes.data(), static_cast<long>(bytes.size()));
  require_payload(h, first + keep, got, in.name());
  if (first + keep == h.items) reject_trailing(in.trailing_bytes(), in.name());
  return bytes;
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

Pixels read_idx_pixels(const std::string& path, long max_items, long first_item) {
  IdxReader in(path);
  const IdxHeader h = read_header(in, IdxKind::Images);
  const long keep = std::max(0L, max_items < 0 ? h.items - first_item : std::min(h.items - first_item, max_items));
  const auto bytes = read_payload(in, h, first_item, keep);
  return Eigen::Map<const Pixels>(bytes.data(), keep, h.item_bytes());
}

void pixels_to_unit(const unsigned char* bytes, long count, double* out) {
  static const std::array<double, 256> unit = [] {
    std::array<double, 256> t{};
    for (int b = 0; b < 256; ++b) t[static_cast<size_t>(b)] = static_cast<double>(b) / 255.0;
    return t;
  }();
  for (long i = 0; i < count; ++i) out[i] = unit[bytes[i]];
}

Matrix read_idx_images(const std::string& path, long max_items, long first_item) {
  const Pixels bytes = read_idx_pixels(path, max_items, first_item);
  Matrix out(bytes.rows(), bytes.cols());  // (N, 784)
  pixels_to_unit(bytes.data(), bytes.size(), out.data());
  return out;
}

Labels read_idx_labels(const std::string& path, long max_items, long first_item) {
  IdxReader in(path);
  const IdxHeader h = read_header(in, IdxKind::Labels);
  const long keep = std::max(0L, max_items < 0 ? h.items - first_item : std::min(h.items - first_item, max_items));
  const auto bytes = read_payload(in, h, first_item, keep);
  Labels y(keep);
  for (long i = 0; i < keep; ++i) {
    if (bytes[static_cast<size_t>(i)] > 9)
      throw DataError(in.name() + ": label " + std::to_string(i) + " is " + std::to_string(bytes[static_cast<size_t>(i)]) +
                      ", expected a class id 0..9");
    y(i) = bytes[static_cast<size_t>(i)];
  }
  return y;
}

namespace {

std::map<std::string, int>& kept_files() {
  static std::map<std::string, int> kept;
  return kept;
}

}  // namespace

int idx::open_for_reading(const std::string& path) {
  const auto kept = kept_files().find(path);
  if (kept == kept_files().end()) return ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  // A copy shares the kept descriptor's offset: readers take turns, each from the start.
  const int fd = ::fcntl(kept->second, F_DUPFD_CLOEXEC, 0);
  if (fd >= 0 && ::lseek(fd, 0, SEEK_SET) != 0) {
    const int lseek_errno = errno;
    ::close(fd);
    errno = lseek_errno;
    return -1;
  }
  return fd;
}

void keep_data_files_open() {
  std::string dir;
  try {
    dir = find_data_dir("");
  } catch (const DataError&) {
    return;
  }
  for (const char* stem : idx::kStems) {
    const std::string path = idx_file(dir, stem);
    if (path.empty() || kept_files().count(path)) continue;
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) kept_files()[path] = fd;
  }
}

std::vector<std::string> data_search_path(const std::string& flag_dir) {
  std::vector<std::string> dirs;
  if (!flag_dir.empty()) dirs.push_back(flag_dir);
  if (const char* env = std::getenv("DTRAIN_DATA"); env && *env) dirs.push_back(env);
  dirs.push_back(std::string(kit_dir()) + "/data");
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
                  "(or put the four MNIST IDX files, plain or .gz, in " + std::string(kit_dir()) +
                  "/data/, or name a directory with --data DIR or DTRAIN_DATA)");
}

Dataset load_dataset(const std::string& flag_dir, long max_train, long max_test, long first_train) {
  Dataset data;
  data.dir = find_data_dir(flag_dir);
  data.train.x = read_idx_images(idx_file(data.dir, kStems[0]), max_train, first_train);
  data.train.y = read_idx_labels(idx_file(data.dir, kStems[1]), max_train, first_train);
  data.test.x = read_idx_images(idx_file(data.dir, kStems[2]), max_test);
  data.test.y = read_idx_labels(idx_file(data.dir, kStems[3]), max_test);
  for (const auto& [split, stem] : {std::pair{&data.train, 0}, std::pair{&data.test, 2}})
    check_split(data.dir, stem, split->x.rows(), split->x.cols(), split->y.size());
  return data;
}

PixelDataset load_pixels(const std::string& flag_dir, long max_train, long max_test, long first_train) {
  PixelDataset data;
  data.dir = find_data_dir(flag_dir);
  data.train_x = read_idx_pixels(idx_file(data.dir, kStems[0]), max_train, first_train);
  data.train_y = read_idx_labels(idx_file(data.dir, kStems[1]), max_train, first_train);
  data.test_x = read_idx_pixels(idx_file(data.dir, kStems[2]), max_test);
  data.test_y = read_idx_labels(idx_file(data.dir, kStems[3]), max_test);
  for (const auto& [x, y, stem] : {std::tuple{&data.train_x, &data.train_y, 0}, std::tuple{&data.test_x, &data.test_y, 2}})
    check_split(data.dir, stem, x->rows(), x->cols(), y->size());
  return data;
}

}  // namespace dtrain
