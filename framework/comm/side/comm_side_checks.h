// comm_side_checks.h: what the side's handlers share (comm_side_ops.cpp,
// comm_side_p2p.cpp): the checks of a request's numbers and sizes, which
// are the child's bytes, and the shape of the kit's point-to-point messages.
#pragma once

#include <climits>
#include <cstring>
#include <string>
#include <vector>

#include "comm_side_ops.h"

namespace dtrain::side {

inline MPI_Op to_mpi(std::int64_t op) {
  switch (op) {
    case 0: return MPI_SUM;
    case 1: return MPI_MIN;
    case 2: return MPI_MAX;
  }
  bad_request("unknown reduction " + std::to_string(op));
}

inline int count_of(std::int64_t n, const char* what) {
  if (n < 0 || n > INT_MAX) bad_request(std::string(what) + ": count " + std::to_string(n) + " out of range");
  return static_cast<int>(n);
}

// The request's data as `n` values of T; its length must be exactly that.
template <typename T>
inline const T* data_of(const std::vector<char>& in, long n, const char* what) {
  if (in.size() != static_cast<std::size_t>(n) * sizeof(T))
    bad_request(std::string(what) + ": " + std::to_string(in.size()) + " bytes of data where " +
                std::to_string(static_cast<std::size_t>(n) * sizeof(T)) + " belong");
  return reinterpret_cast<const T*>(in.data());
}

template <typename T>
inline Answer with(const T* values, std::size_t n) {
  Answer a;
  a.data.resize(n * sizeof(T));
  if (n > 0) std::memcpy(a.data.data(), values, a.data.size());
  return a;
}

// One message of the kit's point-to-point calls is three MPI messages on tags
// derived from the caller's (comm_p2p.cpp explains why):
//   header   the sender's element count, sent synchronously
//   verdict  the receiver's element count, back to the sender
//   payload  the elements, only if the two counts are equal
inline constexpr int kTagsPerMessage = 3;
inline constexpr int kMostTag = 10000;  // comm.h's; its three tags stay within the 32767 every MPI offers
inline int header_tag(int tag) { return kTagsPerMessage * tag; }
inline int verdict_tag(int tag) { return kTagsPerMessage * tag + 1; }
inline int payload_tag(int tag) { return kTagsPerMessage * tag + 2; }

inline int tag_of(std::int64_t tag) {
  if (tag < 0 || tag > kMostTag) bad_request("tag " + std::to_string(tag) + " out of range");
  return static_cast<int>(tag);
}

// A rank may wait long for its peer (a peer still computing, a cycle of sends).
inline void finish(MPI_Request* requests, int n, const char* call) {
  for (int i = 0; i < n; ++i) wait_polling(requests[i], call, Idle::Yield);
}

// An answer whose data is `n` doubles, which MPI writes in place: the side
// holds a buffer once, not once for MPI and again for the link.
inline double* doubles_of(Answer& a, std::size_t n) {
  a.data.resize(n * sizeof(double));
  return reinterpret_cast<double*>(a.data.data());  // operator new's alignment suits a double
}

}  // namespace dtrain::side
