// compress_forms.h: Part 14's functions and values in the form a driven call
// carries them (framework/calls/driven.h): a Sparse travels as its length,
// its indices and its values; the residual compress_with_feedback updates in
// place goes back beside its result. The student's process serves these
// (compress_served.cpp); the harness calls them by their declarations
// (compress_calls.h).
#pragma once

#include <utility>

#include "call_types.h"
#include "compress.h"

namespace dtrain::calls {

// n, then the index count and each index (Int), then the values (a Vector).
// Whatever the student's process wrote is read as it is: index and value
// of two lengths, an index out of range; the case's checks judge them.
template <>
struct Value<Sparse> {
  static void put(Writer& w, const Sparse& s) {
    w.put(static_cast<std::int64_t>(s.n));
    w.put(static_cast<std::int64_t>(s.index.size()));
    for (long i : s.index) w.put(static_cast<std::int64_t>(i));
    w.put(s.value);
  }
  static Sparse get(Reader& r, Borrowed&) {
    Sparse s;
    s.n = static_cast<long>(r.integer());
    const std::int64_t k = r.integer();
    if (k < 0 || k > kMostElements) throw BadValues("a sparse vector's index count out of range");
    for (std::int64_t i = 0; i < k; ++i) s.index.push_back(static_cast<long>(r.integer()));  // each read checks its bytes
    s.value = r.vector();
    return s;
  }
};

namespace compress {

// The residual in, the compressed gradient and the residual out.
inline std::pair<Sparse, Vector> compress_with_feedback(Vector residual, const Vector& grad,
                                                        long k) {  // (N), (N) -> K of N, (N)
  ErrorFeedback ef(static_cast<long>(residual.size()));
  ef.residual = std::move(residual);
  Sparse c = ::dtrain::compress_with_feedback(ef, grad, k);
  return {std::move(c), std::move(ef.residual)};
}

}  // namespace compress

}  // namespace dtrain::calls
