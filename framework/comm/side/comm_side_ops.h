// comm_side_ops.h: what the MPI side does for each request of the link (comm_link.h):
// its communicators and requests, by the numbers it gave the child, and the
// account of the traffic it carried (traffic.h).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "comm_side_mpi.h"
#include "kit_facts.h"  // generated from kit/facts.py
#include "side_page.h"
#include "traffic.h"

namespace dtrain::side {

// A quiet NaN's bits: a Request finding's `first` where the request sends nothing.
inline constexpr std::int64_t kNothingSent = 0x7ff8000000000000;

// The ranks of `comm`, by rank in MPI's world.
std::vector<int> world_ranks_of(MPI_Comm comm);

// One answer: the reply and its data. `tail` follows `data`, inline (a
// driven call's values after the side's findings): the values are moved
// in, never copied, so an answer as large as the side can hold once still fits.
struct Answer {
  link::Reply reply{};
  std::vector<char> data;
  std::vector<char> tail;
};

class Ops {
 public:
  explicit Ops(Traffic& traffic);
  // Carries out one request; `in` is its data. Throws std::invalid_argument
  // for a request that breaks the link's rules, std::runtime_error for MPI's failures.
  // `in` may be taken: MPI reduces in place where it can, and the answer keeps the buffer.
  Answer handle(const link::Header& h, std::vector<char>& in);
  // A collective (Allreduce, Allgather, ReduceScatter) carried out as
  // handle() carries it, but on buffers the caller holds: `src` of
  // `src_bytes`, the answer into `dst` of `dst_bytes` (src == dst: in
  // place). The trainers' in-process link (comm_link_in_process.cpp), whose
  // 1.6 MB gradient a copy into a request and out of its answer cost 8% of a
  // 4-rank epoch. Returns the answer's bytes.
  std::size_t collective(const link::Header& h, const void* src, std::size_t src_bytes, void* dst,
                         std::size_t dst_bytes);
  // Requests still in flight (MPI must finish them before MPI_Finalize).
  void finish_requests();

  // The driven mode (comm_side_agree.cpp): while `function` (the call the
  // harness asked for) is not null, each collective handled is the student
  // process's, and the side compares it with the other ranks' first. Each
  // disagreement leaves a finding (link::Finding, kit/link.py's FINDINGS),
  // as does the student's process ending during a call (found_ended), or
  // leaving processes running (found_strays).
  void check_calls_of(const std::string* function);
  void found_ended(bool signaled, int code);
  void found_strays(int count);
  std::vector<std::int64_t> take_findings();
  // The call returns: what its tests left running goes into its findings.
  void call_returns();
  // ... and what that process is doing goes on `page`, for the harness's
  // roll-call (side_page.h; comm_side_page.cpp).
  void keep_page(side_page::Page* page) { page_ = page; }
  // The student process's filter, as its first Serve said it (link::FilterCode).
  void page_filter(std::int64_t code);
  // The student's process ended: a harness waiting for its first word stops waiting.
  void page_student_gone();
  // Whether the requests handled now are the driven mode's student process's:
  // it may free only the communicators it made.
  void student_asks(bool now) { student_asks_ = now; }

 private:
  struct InFlight {
    MPI_Request mpi = MPI_REQUEST_NULL;
    std::vector<char> src;
    Answer result;  // MPI writes its data in place
  };
  MPI_Comm comm(std::int32_t id) const;
  int size_of(MPI_Comm c) const;
  std::int32_t add(MPI_Comm c);
  Answer new_comm(MPI_Comm c, std::vector<int> members, std::int64_t group);
  // A communicator's group: one number for it on every rank of it, whatever
  // its number on each side (the world's is 1; -1 for none this side made).
  // A roll-call tells by it that every rank of a hung case waits in one
  // collective of one communicator: a stall of the host, never the code's.
  std::int64_t group_of(std::int32_t comm) const;
  std::int64_t next_group(std::int32_t parent, std::int64_t color);
  Answer dispatch(const link::Header& h, std::vector<char>& in);

  // The page's side of a request of the student's process (comm_side_page.cpp).
  void page_begins(const link::Header& h, const std::vector<char>& in);
  void page_ends(const link::Header& h, const Answer* answer);
  void page_case_begins();
  side_page::Comm* page_comm(std::int64_t comm);
  // The call's record of its requests (link::Finding::Request).
  void log_request(const link::Header& h, const Answer& answer, std::int64_t op);
  void log_event(link::RequestEvent event, std::int64_t op, std::int64_t comm, std::int64_t dest, std::int64_t source,
                 std::int64_t count, std::int64_t request, std::int64_t failed_tests, std::int64_t send_tag = -1,
                 std::int64_t recv_tag = -1, std::int64_t first = kNothingSent, std::int64_t sum = kNothingSent);

  Answer reduce(const link::Header& h, std::vector<char>& in);
  // A collective's counts (in doubles), agreed with the other ranks first;
  // `one_rank`: nothing moves (the child copies), and the call, once its
  // data is checked, is only counted.
  struct Collective {
    MPI_Comm comm;
    facts::OpCode op;
    int count, ranks;
    std::size_t in, out;
    bool one_rank;
  };
  Collective collective_agreed(const link::Header& h);
  void carry_collective(const link::Header& h, const Collective& s, const double* src, double* dst);
  // A one-rank call moves nothing (the child copies): once it is seen to
  // bring no data, it is only counted.
  void count_one_rank(const Collective& s, std::size_t data_bytes);
  Answer point_to_point(const link::Header& h, const std::vector<char>& in);
  Answer sendrecv(const link::Header& h, const std::vector<char>& in);
  Answer request(const link::Header& h, const std::vector<char>& in);
  Answer text(const link::Header& h, const std::vector<char>& in);
  Answer clock_offset(const link::Header& h);
  void agree(std::int32_t comm_number, std::int64_t op, std::int64_t count, std::int64_t reduction);
  // Any request can move data, so the kit's own go into the case's account too.
  void kit_request(facts::KitRequest r, long count, int ranks) { traffic_.request(r, count, ranks); }

  Traffic& traffic_;
  std::vector<MPI_Comm> comms_;  // by number; 0 is MPI's world
  std::map<std::int64_t, InFlight> requests_;
  std::int64_t next_request_ = 1;
  const std::string* checked_function_ = nullptr;
  std::map<std::int32_t, std::int64_t> sequence_;  // the student's collectives so far, by communicator
  std::vector<std::int64_t> findings_;
  bool student_asks_ = false;
  std::set<std::int32_t> students_comms_;  // the communicators the student's process made
  std::map<std::int32_t, std::int64_t> groups_;     // by number (group_of)
  std::map<std::int32_t, std::int64_t> made_from_;  // communicators made from each so far
  struct Logged {
    std::int64_t comm, count;
  };
  std::map<std::int64_t, Logged> logged_;           // the student's requests not yet seen complete, by number
  std::map<std::int64_t, std::int64_t> tested_running_;  // request -> tests in this call that found it running
  // The first element the request in flight sends, as a double's bits (page_begins).
  std::int64_t first_sent_ = kNothingSent, sum_sent_ = kNothingSent;  // and the sum of what it sends
  std::int64_t logged_in_call_ = 0, unlogged_in_call_ = 0;  // this call's Request findings, and those past the cap
  side_page::Page* page_ = nullptr;
};

}  // namespace dtrain::side
