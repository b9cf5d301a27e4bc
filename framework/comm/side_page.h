// side_page.h: the MPI side's page of what the student's process is doing,
// in the driven mode (framework/calls/driven.h). The side writes it as it
// carries out that process's requests; the harness maps it read-only and
// reads it for the roll-call of a hung case (rank_state.h), even while the
// side waits inside MPI. The student's process is never given it. Numbers
// only: communicators by the side's number, functions by function_id.h's;
// the harness names them.
//
// A seqlock: the side makes `version` odd, writes, makes it even again; a
// reader copies the page and keeps the copy if the version was even and
// unchanged around it.
#pragma once

#include <cstdint>
#include <cstring>

namespace dtrain::side_page {

inline constexpr int kMostRequests = 8;   // requests in flight past this are not shown
inline constexpr int kMostComms = 16;     // communicators of one case past this are not shown
inline constexpr const char* kEnvVariable = "KIT_SIDE_PAGE";  // the harness's descriptor for it

struct Request {
  std::int64_t id, op, comm, seq, count, function;
};

struct Comm {
  std::int64_t comm;                      // the side's number
  std::int64_t parent, color, key;        // made by a split of the student's (parent -1: not)
  std::int64_t collectives, point_to_point;  // this case's, by the student's process
};

struct Page {
  std::uint64_t version;
  // The call in flight: an operation (facts::OpCode) on a communicator.
  std::int64_t active, op, comm, seq, count, function;
  std::int64_t group;  // the communicator's, the same on each of its ranks (Ops::group_of)
  std::int64_t to, to_local, send_tag, from, from_local, recv_tag;  // -1 where the call has no such end
  std::int64_t waited;  // the id of the request it waits for, or 0
  std::int64_t requests, comms;
  std::int64_t student_filter;  // link::FilterCode, as the student process's first Serve said it
  std::int64_t student_gone;    // 1 once the side saw the student's process end
  Request request[kMostRequests];
  Comm per_comm[kMostComms];
};

// The writer's two steps around each change.
inline void begin_write(Page& p) {
  __atomic_store_n(&p.version, p.version + 1, __ATOMIC_RELAXED);
  __atomic_thread_fence(__ATOMIC_RELEASE);
}
inline void end_write(Page& p) { __atomic_store_n(&p.version, p.version + 1, __ATOMIC_RELEASE); }

// A consistent copy, or false after a few tries while the side writes.
inline bool read(const Page& p, Page& out) {
  for (int attempt = 0; attempt < 1000; ++attempt) {
    const std::uint64_t before = __atomic_load_n(&p.version, __ATOMIC_ACQUIRE);
    if (before % 2 != 0) continue;
    std::memcpy(&out, &p, sizeof out);
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if (__atomic_load_n(&p.version, __ATOMIC_RELAXED) == before) return true;
  }
  return false;
}

}  // namespace dtrain::side_page
