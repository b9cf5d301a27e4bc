// sent_digest.h: what the call logs keep of a call's buffer (ledger::LoggedCall):
// its first element and the sum of its elements, added in order, so that a
// part's checks can tell which buffer a call carried. One formula for both
// places that make them: the ledger in one process (ledger.cpp) and the MPI
// side in the driven mode (comm_side_page.cpp), which reads the payload.
#pragma once

#include <cstring>
#include <limits>

namespace dtrain::comm_detail {

struct SentDigest {
  double first = std::numeric_limits<double>::quiet_NaN();  // NaN: nothing sent
  double sum = std::numeric_limits<double>::quiet_NaN();
};

// `bytes` holds n doubles, aligned or not (a payload read off the link).
inline SentDigest digest_of(const void* bytes, long n) {
  SentDigest d;
  if (bytes == nullptr || n <= 0) return d;
  const char* at = static_cast<const char*>(bytes);
  double sum = 0, v = 0;
  for (long i = 0; i < n; ++i) {
    std::memcpy(&v, at + i * sizeof v, sizeof v);
    if (i == 0) d.first = v;
    sum += v;
  }
  d.sum = sum;
  return d;
}

}  // namespace dtrain::comm_detail
