// idx_format.cpp: the IDX header parser and length checks (idx_format.h).
#include "idx_format.h"

#include <sys/stat.h>

#include <cstdio>
#include <sstream>

namespace dtrain::idx {

namespace {

constexpr std::uint32_t kImagesMagic = 0x00000803, kLabelsMagic = 0x00000801;
constexpr long kMaxBytes = 1L << 31;

std::string hex(std::uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

std::uint32_t be32(const unsigned char* b) {
  return (std::uint32_t(b[0]) << 24) | (std::uint32_t(b[1]) << 16) | (std::uint32_t(b[2]) << 8) | b[3];
}

}  // namespace

std::string base_name(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool is_dir(const std::string& path) {
  struct stat st{};
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool is_file(const std::string& path) {
  struct stat st{};
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

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

void check_split(const std::string& dir, int stem, long images, long pixels, long labels) {
  if (images != labels)
    throw DataError(dir + ": " + kStems[stem] + " has " + std::to_string(images) + " images but " + kStems[stem + 1] +
                    " has " + std::to_string(labels) + " labels");
  if (pixels != kPixels)
    throw DataError(dir + ": " + kStems[stem] + " holds images of " + std::to_string(pixels) +
                    " pixels; the model needs 28x28 = " + std::to_string(kPixels));
}

}  // namespace dtrain::idx
