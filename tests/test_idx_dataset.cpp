// The data loaders (framework/data/idx_format.cpp, idx_dataset.cpp, pixel_file.cpp): one process, no MPI.
//   build/framework_tests                      (CTest: framework/units)
// Every input is built here, in a fresh temporary directory: valid IDX files,
// plain and gzipped, and broken ones, each of which must get an error that
// names the file and what is wrong.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <functional>
#include <string>
#include <vector>

#include "idx_dataset.h"

namespace fs = std::filesystem;
using dtrain::DataError;

namespace {

using Bytes = std::vector<unsigned char>;

void put_u32(Bytes& out, std::uint32_t v) {
  for (int shift : {24, 16, 8, 0}) out.push_back(static_cast<unsigned char>(v >> shift));
}

// An images file of n images of rows x cols, pixel k of image i = (i * 7 + k) % 256.
Bytes images(std::uint32_t n, std::uint32_t rows = 28, std::uint32_t cols = 28) {
  Bytes out;
  put_u32(out, 0x00000803);
  put_u32(out, n);
  put_u32(out, rows);
  put_u32(out, cols);
  for (std::uint32_t i = 0; i < n; ++i)
    for (std::uint32_t k = 0; k < rows * cols; ++k) out.push_back(static_cast<unsigned char>((i * 7 + k) % 256));
  return out;
}

Bytes labels(std::uint32_t n) {
  Bytes out;
  put_u32(out, 0x00000801);
  put_u32(out, n);
  for (std::uint32_t i = 0; i < n; ++i) out.push_back(static_cast<unsigned char>(i % 10));
  return out;
}

class TempDir {
 public:
  TempDir() {
    char pattern[] = "/tmp/kit-idx-XXXXXX";
    path_ = mkdtemp(pattern);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string file(const std::string& name, const Bytes& bytes, bool gzip = false) const {
    const std::string path = path_ + "/" + name + (gzip ? ".gz" : "");
    if (gzip) {
      gzFile f = gzopen(path.c_str(), "wb");
      gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
      gzclose(f);
    } else {
      std::FILE* f = std::fopen(path.c_str(), "wb");
      std::fwrite(bytes.data(), 1, bytes.size(), f);
      std::fclose(f);
    }
    return path;
  }
  // The four files of a small data set: 6 training and 4 test samples.
  void full_set(bool gzip = false) const {
    file("train-images-idx3-ubyte", images(6), gzip);
    file("train-labels-idx1-ubyte", labels(6), gzip);
    file("t10k-images-idx3-ubyte", images(4), gzip);
    file("t10k-labels-idx1-ubyte", labels(4), gzip);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Runs `body` with DTRAIN_DATA set to `value` (or unset), restoring it after.
template <typename Body>
void with_data_env(const char* value, Body&& body) {
  const char* old = std::getenv("DTRAIN_DATA");
  const std::string saved = old ? old : "";
  if (value) setenv("DTRAIN_DATA", value, 1); else unsetenv("DTRAIN_DATA");
  body();
  if (old) setenv("DTRAIN_DATA", saved.c_str(), 1); else unsetenv("DTRAIN_DATA");
}

std::string error_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const DataError& e) {
    return e.what();
  }
  return "(no DataError)";
}

#define EXPECT_MENTIONS(text, piece) EXPECT_NE(std::string(text).find(piece), std::string::npos) << (text)

}  // namespace

TEST(IdxDataset, ReadsPlainAndGzippedFilesTheSame) {
  TempDir dir;
  for (bool gzip : {false, true}) {
    SCOPED_TRACE(gzip ? "gzipped" : "plain");
    const dtrain::Matrix x = dtrain::read_idx_images(dir.file(gzip ? "a" : "b", images(3), gzip));
    ASSERT_EQ(x.rows(), 3);
    ASSERT_EQ(x.cols(), 784);
    EXPECT_DOUBLE_EQ(x(2, 5), ((2 * 7 + 5) % 256) / 255.0);
    EXPECT_DOUBLE_EQ(x(1, 783), ((7 + 783) % 256) / 255.0);
    const dtrain::Labels y = dtrain::read_idx_labels(dir.file(gzip ? "c" : "d", labels(12), gzip));
    ASSERT_EQ(y.size(), 12);
    EXPECT_EQ(y(11), 1);
  }
}

TEST(IdxDataset, MaxItemsReadsTheFirstOnes) {
  TempDir dir;
  EXPECT_EQ(dtrain::read_idx_images(dir.file("i", images(5)), 2).rows(), 2);
  EXPECT_EQ(dtrain::read_idx_images(dir.file("j", images(5)), 50).rows(), 5);
  EXPECT_EQ(dtrain::read_idx_labels(dir.file("l", labels(5)), 3).size(), 3);
}

TEST(IdxDataset, WrongMagicSaysWhichKindOfFileItIs) {
  TempDir dir;
  const std::string text = error_of([&] { dtrain::read_idx_images(dir.file("lbl", labels(3))); });
  EXPECT_MENTIONS(text, "lbl");
  EXPECT_MENTIONS(text, "0x00000801");
  EXPECT_MENTIONS(text, "labels file, not images");
  Bytes junk = {'h', 'e', 'l', 'l', 'o', '!', '!', '!'};
  EXPECT_MENTIONS(error_of([&] { dtrain::read_idx_labels(dir.file("junk", junk)); }), "not an IDX labels file");
}

TEST(IdxDataset, TruncatedPixelsAndHeaderAreNamed) {
  TempDir dir;
  Bytes cut = images(3);
  cut.resize(cut.size() - 100);
  const std::string text = error_of([&] { dtrain::read_idx_images(dir.file("cut", cut, true)); });
  EXPECT_MENTIONS(text, "cut.gz: truncated");
  EXPECT_MENTIONS(text, "3 images of 28x28 (2352 bytes)");
  EXPECT_MENTIONS(text, "2252 bytes");
  Bytes header = images(1);
  header.resize(9);
  EXPECT_MENTIONS(error_of([&] { dtrain::read_idx_images(dir.file("head", header)); }), "truncated header");
}

TEST(IdxDataset, TrailingBytesAndBadLabelsAreRejected) {
  TempDir dir;
  Bytes extra = labels(4);
  extra.push_back(1);
  extra.push_back(2);
  EXPECT_MENTIONS(error_of([&] { dtrain::read_idx_labels(dir.file("extra", extra)); }), "2 unexpected bytes");
  Bytes bad = labels(4);
  bad[8 + 2] = 42;
  const std::string text = error_of([&] { dtrain::read_idx_labels(dir.file("bad", bad)); });
  EXPECT_MENTIONS(text, "label 2 is 42");
}

// The trainers' loader (a mapped PixelFile) checks a file as read_idx_images
// does, with the same words, and a file it refuses is not left mapped.
TEST(IdxDataset, PixelFileRefusesWhatReadIdxImagesRefuses) {
  TempDir dir;
  Bytes cut = images(3);
  cut.resize(cut.size() - 100);
  Bytes extra = images(2);
  extra.push_back(9);
  Bytes head = images(1);
  head.resize(9);
  const std::pair<const char*, Bytes> broken[] = {
      {"wrong_magic", labels(40)}, {"truncated", cut}, {"trailing", extra}, {"short_header", head}};
  const char* says[] = {"labels file, not images", "truncated: header promises 3 images of 28x28 (2352 bytes), file has 2252",
                        "1 unexpected bytes", "truncated header (no row count)"};
  for (size_t i = 0; i < 4; ++i) {
    SCOPED_TRACE(broken[i].first);
    const std::string path = dir.file(broken[i].first, broken[i].second);
    const std::string mapped = error_of([&] { dtrain::PixelFile pixels(path); });
    EXPECT_MENTIONS(mapped, says[i]);
    EXPECT_EQ(mapped, error_of([&] { dtrain::read_idx_images(path); })) << "both loaders, one message";
    std::ifstream maps("/proc/self/maps");
    const std::string mappings((std::istreambuf_iterator<char>(maps)), std::istreambuf_iterator<char>());
    EXPECT_EQ(mappings.find(path), std::string::npos) << "the refused file is still mapped";
  }
  const dtrain::PixelFile good(dir.file("good", images(3)), 2);
  EXPECT_EQ(good.rows(), 2);
  EXPECT_EQ(good.take(Eigen::VectorXi::Constant(1, 1))(0, 5), (7 + 5) % 256);  // row 1's bytes
}

// The table of quotients gives what dividing gives, to the bit, for every
// byte: the trainers and the harness convert through it, and the recorded
// values were made by dividing.
TEST(IdxDataset, PixelsToUnitIsTheQuotientOfEveryByte) {
  unsigned char bytes[256];
  for (int b = 0; b < 256; ++b) bytes[b] = static_cast<unsigned char>(b);
  double unit[256];
  dtrain::pixels_to_unit(bytes, 256, unit);
  for (int b = 0; b < 256; ++b) EXPECT_EQ(unit[b], static_cast<double>(b) / 255.0) << "byte " << b;
}

TEST(IdxDataset, CorruptGzipIsAnError) {
  TempDir dir;
  Bytes fake = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 0xde, 0xad, 0xbe, 0xef, 1, 2, 3};
  // Written as is: a gzip header followed by bytes that do not inflate.
  const std::string text = error_of([&] { dtrain::read_idx_images(dir.file("broken.gz", fake)); });
  EXPECT_MENTIONS(text, "broken.gz: not readable as gzip");
}

TEST(IdxDataset, MissingFileNamesIt) {
  const std::string text = error_of([] { dtrain::read_idx_images("/nonexistent/train-images-idx3-ubyte"); });
  EXPECT_MENTIONS(text, "/nonexistent/train-images-idx3-ubyte: cannot open");
}

TEST(IdxDataset, FlagDirectoryWinsAndMustBeComplete) {
  TempDir flag, env;
  flag.full_set(true);
  env.full_set();
  with_data_env(env.path().c_str(), [&] {
    EXPECT_EQ(dtrain::find_data_dir(flag.path()), flag.path());
    EXPECT_EQ(dtrain::find_data_dir(""), env.path());
    const dtrain::Dataset data = dtrain::load_dataset(flag.path());
    EXPECT_EQ(data.train.x.rows(), 6);
    EXPECT_EQ(data.test.y.size(), 4);
  });
  TempDir partial;
  partial.file("train-images-idx3-ubyte", images(1));
  const std::string text = error_of([&] { dtrain::find_data_dir(partial.path()); });
  EXPECT_MENTIONS(text, "--data names " + partial.path());
  EXPECT_MENTIONS(text, "t10k-labels-idx1-ubyte");
  with_data_env(partial.path().c_str(),
                [&] { EXPECT_MENTIONS(error_of([] { dtrain::find_data_dir(""); }), "DTRAIN_DATA names"); });
}

TEST(IdxDataset, CountMismatchIsReported) {
  TempDir dir;
  dir.full_set();
  dir.file("t10k-labels-idx1-ubyte", labels(3));
  const std::string text = error_of([&] { dtrain::load_dataset(dir.path()); });
  EXPECT_MENTIONS(text, "4 images but");
  EXPECT_MENTIONS(text, "3 labels");
}

TEST(IdxDataset, SearchOrderIsFlagVariableKitSystem) {
  with_data_env("/from/env", [] {
    const auto places = dtrain::data_search_path("/from/flag");
    ASSERT_EQ(places.size(), 4u);
    EXPECT_EQ(places[0], "/from/flag");
    EXPECT_EQ(places[1], "/from/env");
    EXPECT_EQ(places[2], std::string(dtrain::kit_dir()) + "/data");
    EXPECT_EQ(places[3], "/usr/share/datasets/fashion-mnist");
  });
}

TEST(IdxDataset, NothingFoundListsWhereItLookedAndHowToInstall) {
  TempDir empty;
  const std::string text = error_of([&] { dtrain::first_complete_dir({empty.path(), "/no/such/dir"}); });
  EXPECT_MENTIONS(text, "Looked in");
  EXPECT_MENTIONS(text, empty.path() + " (no IDX files)");
  EXPECT_MENTIONS(text, "/no/such/dir (no such directory)");
  EXPECT_MENTIONS(text, "sudo apt-get install dataset-fashion-mnist");
}

TEST(IdxDataset, TheDefaultDataSetLoads) {
  const std::string dir = "/usr/share/datasets/fashion-mnist";
  ASSERT_FALSE(dtrain::idx_file(dir, "train-images-idx3-ubyte").empty())
      << dir << " has no data set; install it with: sudo apt-get install dataset-fashion-mnist";
  const dtrain::Dataset data = dtrain::load_dataset(dir);
  EXPECT_EQ(data.train.x.rows(), 60000);
  EXPECT_EQ(data.test.x.rows(), 10000);
  EXPECT_EQ(data.train.x.cols(), 784);
  EXPECT_GE(data.train.x.minCoeff(), 0.0);
  EXPECT_LE(data.train.x.maxCoeff(), 1.0);
  EXPECT_GE(data.train.y.minCoeff(), 0);
  EXPECT_LE(data.train.y.maxCoeff(), 9);
}
