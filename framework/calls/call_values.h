// call_values.h: the values of a driven student call (driven.h), as they
// travel between the harness and the student's process: each one a tag,
// then its fields. Both ends read and write them with these two classes,
// so a value has one form; a reader checks every tag and size it is given
// (the student's process writes the outcomes: they are data, never trusted
// to be well formed), and throws BadValues at the first that breaks them.
//
//   tag      fields (int64 unless said)
//   Int      value
//   Real     value (double)
//   Matrix   rows, cols, then rows * cols doubles, row-major   (B, D) and every other shape
//   Vector   n, then n doubles
//   Labels   n, then n int64 (each an int)
//   Comm     the side's number for a communicator (the world is 0)
//   Text     n, then n bytes (an exception's message)
//   Object   the student's process's number for an object it holds (driven.h)
#pragma once

#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "link_messages.h"  // generated from kit/link.py
#include "tensor.h"

namespace dtrain::calls {

enum class Tag : std::int64_t { Int = 1, Real, Matrix, Vector, Labels, Comm, Text, Object };

// What the student's process says of a call (the Serve's outcome field),
// kit/link.py's OUTCOMES: Returned (the values: what the function returned),
// ThrewInvalid (std::invalid_argument; the values: its message, a Text),
// Threw (any other exception, the same), CheckFailed (a check in the
// student's code: its fields, call_answer.h), Unknown (no function of that
// name there), Upcall (a call of the harness's function: its name, a
// Text, then its arguments), Gone (the process ended: said by the side).
using Outcome = link::Outcome;

class BadValues : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The most elements one value may hold: more than any case's buffer, and
// small enough that a reader's allocation can't be the student's weapon.
inline constexpr std::int64_t kMostElements = std::int64_t(1) << 26;

class Writer {
 public:
  // A writer that keeps nothing and counts the bytes the same puts would
  // write: a call's arguments are then written into one block of their
  // size, never regrown (a driven harness has a few MiB: kit/limits.py).
  static Writer counting() {
    Writer w;
    w.counting_ = true;
    return w;
  }
  void reserve(std::size_t n) { bytes_.reserve(n); }
  std::size_t size() const { return counting_ ? counted_ : bytes_.size(); }

  void put(std::int64_t v) { tagged(Tag::Int, v); }
  void put(int v) { put(static_cast<std::int64_t>(v)); }
  void put(bool v) { put(static_cast<std::int64_t>(v)); }
  void put(double v) {
    word(static_cast<std::int64_t>(Tag::Real));
    raw(&v, sizeof v);
  }
  void put(const Matrix& m) {
    word(static_cast<std::int64_t>(Tag::Matrix));
    word(m.rows());
    word(m.cols());
    raw(m.data(), sizeof(double) * elements(m.size()));
  }
  void put(const Vector& v) {
    word(static_cast<std::int64_t>(Tag::Vector));
    word(v.size());
    raw(v.data(), sizeof(double) * elements(v.size()));
  }
  void put(const Labels& l) {
    word(static_cast<std::int64_t>(Tag::Labels));
    word(l.size());
    for (Eigen::Index i = 0; i < l.size(); ++i) word(l[i]);
  }
  void comm(std::int32_t side_number) { tagged(Tag::Comm, side_number); }
  void object(std::int64_t id) { tagged(Tag::Object, id); }
  void text(const std::string& s) {
    word(static_cast<std::int64_t>(Tag::Text));
    word(static_cast<std::int64_t>(s.size()));
    raw(s.data(), s.size());
  }
  const std::vector<char>& bytes() const { return bytes_; }
  std::vector<char> take() { return std::move(bytes_); }

 private:
  void tagged(Tag t, std::int64_t v) {
    word(static_cast<std::int64_t>(t));
    word(v);
  }
  void word(std::int64_t v) { raw(&v, sizeof v); }
  // Eigen's sizes are signed, never negative: said so, for the compiler's bounds.
  static std::size_t elements(Eigen::Index n) { return n > 0 ? static_cast<std::size_t>(n) : 0; }
  void raw(const void* p, std::size_t n) {
    if (n > sizeof(double) * static_cast<std::size_t>(kMostElements)) throw BadValues("a value larger than any reader takes");
    if (counting_) {
      counted_ += n;
      return;
    }
    const std::size_t at = bytes_.size();
    bytes_.resize(at + n);
    if (n > 0) std::memcpy(bytes_.data() + at, p, n);
  }
  std::vector<char> bytes_;
  bool counting_ = false;
  std::size_t counted_ = 0;
};

class Reader {
 public:
  Reader(const char* data, std::size_t n) : at_(data), end_(data + n) {}
  explicit Reader(const std::vector<char>& v) : Reader(v.data(), v.size()) {}

  std::int64_t integer() { return tagged(Tag::Int); }
  double real() {
    expect(Tag::Real);
    double v;
    raw(&v, sizeof v);
    return v;
  }
  Matrix matrix() {
    expect(Tag::Matrix);
    const std::int64_t rows = word(), cols = word();
    if (rows < 0 || cols < 0 || (cols > 0 && rows > kMostElements / cols)) throw BadValues("a matrix's shape out of range");
    Matrix m(rows, cols);
    raw(m.data(), sizeof(double) * static_cast<std::size_t>(m.size()));
    return m;
  }
  Vector vector() {
    expect(Tag::Vector);
    Vector v(elements());
    raw(v.data(), sizeof(double) * static_cast<std::size_t>(v.size()));
    return v;
  }
  Labels labels() {
    expect(Tag::Labels);
    Labels l(elements());
    for (Eigen::Index i = 0; i < l.size(); ++i) {
      const std::int64_t v = word();
      if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max()) throw BadValues("a label out of range");
      l[i] = static_cast<int>(v);
    }
    return l;
  }
  std::int32_t comm() {
    const std::int64_t v = tagged(Tag::Comm);
    if (v < 0 || v > std::numeric_limits<std::int32_t>::max()) throw BadValues("a communicator's number out of range");
    return static_cast<std::int32_t>(v);
  }
  std::int64_t object() { return tagged(Tag::Object); }
  std::string text() {
    expect(Tag::Text);
    std::string s(static_cast<std::size_t>(elements()), '\0');
    raw(s.data(), s.size());
    return s;
  }
  bool done() const { return at_ == end_; }
  std::size_t remaining() const { return static_cast<std::size_t>(end_ - at_); }

 private:
  std::int64_t elements() {
    const std::int64_t n = word();
    if (n < 0 || n > kMostElements) throw BadValues("a value's length out of range");
    return n;
  }
  void expect(Tag t) {
    if (word() != static_cast<std::int64_t>(t)) throw BadValues("a value of another type than the call's");
  }
  std::int64_t tagged(Tag t) {
    expect(t);
    return word();
  }
  std::int64_t word() {
    std::int64_t v;
    raw(&v, sizeof v);
    return v;
  }
  void raw(void* p, std::size_t n) {
    if (static_cast<std::size_t>(end_ - at_) < n) throw BadValues("values cut short");
    if (n > 0) std::memcpy(p, at_, n);
    at_ += n;
  }
  const char* at_;
  const char* end_;
};

}  // namespace dtrain::calls
