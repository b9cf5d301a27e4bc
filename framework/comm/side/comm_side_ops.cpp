// comm_side_ops.cpp: see comm_side_ops.h. The child checked every request before
// sending it (comm.cpp, comm_p2p.cpp), with messages that name the
// student's call; the side checks them again, since a request is the
// child's bytes, and answers a broken one with BadArgument.
#include "comm_side_ops.h"

#include <climits>
#include <cstring>
#include <stdexcept>
#include <string>

namespace dtrain::side {

namespace {

using link::Header;
using link::Kind;

MPI_Op to_mpi(std::int64_t op) {
  switch (op) {
    case 0: return MPI_SUM;
    case 1: return MPI_MIN;
    case 2: return MPI_MAX;
  }
  bad_request("unknown reduction " + std::to_string(op));
}

int count_of(std::int64_t n, const char* what) {
  if (n < 0 || n > INT_MAX) bad_request(std::string(what) + ": count " + std::to_string(n) + " out of range");
  return static_cast<int>(n);
}

// The request's data as `n` values of T; its length must be exactly that.
template <typename T>
const T* data_of(const std::vector<char>& in, long n, const char* what) {
  if (in.size() != static_cast<std::size_t>(n) * sizeof(T))
    bad_request(std::string(what) + ": " + std::to_string(in.size()) + " bytes of data where " +
                std::to_string(static_cast<std::size_t>(n) * sizeof(T)) + " belong");
  return reinterpret_cast<const T*>(in.data());
}

template <typename T>
Answer with(const T* values, std::size_t n) {
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
constexpr int kTagsPerMessage = 3;
constexpr int kMostTag = 10000;  // comm.h's; its three tags stay within the 32767 every MPI offers
int header_tag(int tag) { return kTagsPerMessage * tag; }
int verdict_tag(int tag) { return kTagsPerMessage * tag + 1; }
int payload_tag(int tag) { return kTagsPerMessage * tag + 2; }

int tag_of(std::int64_t tag) {
  if (tag < 0 || tag > kMostTag) bad_request("tag " + std::to_string(tag) + " out of range");
  return static_cast<int>(tag);
}

// A rank may wait long for its peer (a pipeline's bubble, a cycle of sends).
void finish(MPI_Request* requests, int n, const char* call) {
  for (int i = 0; i < n; ++i) wait_polling(requests[i], call, Idle::YieldThenSleep);
}

}  // namespace

Ops::Ops(Traffic& traffic) : traffic_(traffic), comms_{MPI_COMM_WORLD} {}

MPI_Comm Ops::comm(std::int32_t id) const {
  if (id < 0 || static_cast<std::size_t>(id) >= comms_.size() || comms_[static_cast<std::size_t>(id)] == MPI_COMM_NULL)
    bad_request("no communicator " + std::to_string(id));
  return comms_[static_cast<std::size_t>(id)];
}

int Ops::size_of(MPI_Comm c) const {
  int n = 0;
  check_mpi(MPI_Comm_size(c, &n), "MPI_Comm_size");
  return n;
}

std::int32_t Ops::add(MPI_Comm c) {
  comms_.push_back(c);
  return static_cast<std::int32_t>(comms_.size() - 1);
}

Answer Ops::new_comm(MPI_Comm c, std::vector<int> members) {
  Answer a = with(members.data(), members.size());
  a.reply.comm = add(c);
  int rank = 0;
  check_mpi(MPI_Comm_rank(c, &rank), "MPI_Comm_rank");
  a.reply.a = rank;
  a.reply.b = size_of(c);
  return a;
}

static std::vector<int> world_ranks_of(MPI_Comm comm) {
  MPI_Group group = MPI_GROUP_NULL, world = MPI_GROUP_NULL;
  check_mpi(MPI_Comm_group(comm, &group), "MPI_Comm_group");
  check_mpi(MPI_Comm_group(MPI_COMM_WORLD, &world), "MPI_Comm_group");
  int n = 0;
  check_mpi(MPI_Group_size(group, &n), "MPI_Group_size");
  std::vector<int> mine(static_cast<size_t>(n)), out(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) mine[static_cast<size_t>(r)] = r;
  check_mpi(MPI_Group_translate_ranks(group, n, mine.data(), world, out.data()), "MPI_Group_translate_ranks");
  MPI_Group_free(&group);
  MPI_Group_free(&world);
  return out;
}

Answer Ops::handle(const Header& h, std::vector<char>& in) {
  switch (h.kind) {
    case Kind::Hello: {
      Answer a;
      int rank = 0;
      check_mpi(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "MPI_Comm_rank");
      a.reply.a = rank;
      a.reply.b = size_of(MPI_COMM_WORLD);
      return a;
    }
    case Kind::Dup: {
      const MPI_Comm from = comm(h.comm);
      MPI_Comm copy = MPI_COMM_NULL;
      check_mpi(MPI_Comm_dup(from, &copy), "MPI_Comm_dup");
      return new_comm(copy, world_ranks_of(copy));
    }
    case Kind::Split: {
      const MPI_Comm from = comm(h.comm);
      if (h.a < 0 || h.a > INT_MAX || h.b < INT_MIN || h.b > INT_MAX) bad_request("split: color or key out of range");
      MPI_Comm part = MPI_COMM_NULL;
      check_mpi(MPI_Comm_split(from, static_cast<int>(h.a), static_cast<int>(h.b), &part), "MPI_Comm_split");
      traffic_.note("split", 0, size_of(from));
      return new_comm(part, world_ranks_of(part));
    }
    case Kind::Free: {
      if (h.comm == 0) bad_request("the world is not freed");
      MPI_Comm c = comm(h.comm);
      MPI_Comm_free(&c);
      comms_[static_cast<std::size_t>(h.comm)] = MPI_COMM_NULL;
      return {};
    }
    case Kind::Members: {
      const std::vector<int> members = world_ranks_of(comm(h.comm));
      return with(members.data(), members.size());
    }
    case Kind::Allreduce:
    case Kind::Allgather:
    case Kind::ReduceScatter:
      return reduce(h, in, h.kind);
    case Kind::Barrier: {
      const MPI_Comm c = comm(h.comm);
      if (h.a < 0 || h.a > 2) bad_request("barrier: no such way to wait");
      run_polled("MPI_Ibarrier", [&](MPI_Request* r) { return MPI_Ibarrier(c, r); }, static_cast<Idle>(h.a));
      if (static_cast<Idle>(h.a) != Idle::Sleep) traffic_.note("barrier", 0, size_of(c));  // Sleep: the harness's rendezvous
      return {};
    }
    case Kind::Agree: {
      const MPI_Comm c = comm(h.comm);
      const std::int64_t* mine = data_of<std::int64_t>(in, link::kAgreeFields, "agreement");
      std::vector<std::int64_t> all(static_cast<std::size_t>(link::kAgreeFields) * static_cast<std::size_t>(size_of(c)));
      // Where a hung case's ranks wait (the call after it is made only once all are here).
      run_polled(
          "MPI_Iallgather (agreement)",
          [&](MPI_Request* r) {
            return MPI_Iallgather(mine, link::kAgreeFields, MPI_INT64_T, all.data(), link::kAgreeFields, MPI_INT64_T,
                                  c, r);
          },
          Idle::YieldThenSleep);
      return with(all.data(), all.size());
    }
    case Kind::MaxOverRanks: {
      const MPI_Comm c = comm(h.comm);
      long value = static_cast<long>(h.a), result = 0;
      // The test harness's end of a case: the ranks done with it wait here for the rest, however long.
      run_polled(
          "MPI_Iallreduce", [&](MPI_Request* r) { return MPI_Iallreduce(&value, &result, 1, MPI_LONG, MPI_MAX, c, r); },
          Idle::YieldThenSleep);
      Answer a;
      a.reply.a = result;
      return a;
    }
    case Kind::GatherText:
      return text(h, in);
    case Kind::ClockOffset:
      return clock_offset(h);
    case Kind::Send:
    case Kind::Recv:
      return point_to_point(h, in);
    case Kind::Sendrecv:
      return sendrecv(h, in);
    case Kind::Istart:
    case Kind::Test:
    case Kind::Wait:
      return request(h, in);
    case Kind::Case:
      traffic_.begin_case(std::string(in.begin(), in.end()));
      return {};
    case Kind::Checkpoint:
      traffic_.checkpoint();
      return {};
    case Kind::DdpCall:
      traffic_.ddp_call(h.a, h.b);
      return {};
    case Kind::Finalize:
      break;
  }
  bad_request("unknown request " + std::to_string(static_cast<int>(h.kind)));
}

// An answer whose data is `n` doubles, which MPI writes in place: the side
// holds a buffer once, not once for MPI and again for the link.
static double* doubles_of(Answer& a, std::size_t n) {
  a.data.resize(n * sizeof(double));
  return reinterpret_cast<double*>(a.data.data());  // operator new's alignment suits a double
}

Answer Ops::reduce(const Header& h, std::vector<char>& in, Kind kind) {
  const MPI_Comm c = comm(h.comm);
  const int n = size_of(c);
  const int count = count_of(h.a, "collective");
  if (static_cast<long>(count) * n > INT_MAX) bad_request("collective: count times ranks beyond MPI's int");
  Answer a;
  if (kind == Kind::Allreduce) {
    const MPI_Op op = to_mpi(h.b);
    double* buf = const_cast<double*>(data_of<double>(in, count, "allreduce"));
    run_collective("MPI_Allreduce", "MPI_Iallreduce",
                   [&] { return MPI_Allreduce(MPI_IN_PLACE, buf, count, MPI_DOUBLE, op, c); },
                   [&](MPI_Request* r) { return MPI_Iallreduce(MPI_IN_PLACE, buf, count, MPI_DOUBLE, op, c, r); });
    traffic_.note("allreduce", count, n);
    a.data = std::move(in);
    return a;
  }
  if (kind == Kind::Allgather) {
    const double* src = data_of<double>(in, count, "allgather");
    double* dst = doubles_of(a, static_cast<std::size_t>(count) * static_cast<std::size_t>(n));
    run_collective("MPI_Allgather", "MPI_Iallgather",
                   [&] { return MPI_Allgather(src, count, MPI_DOUBLE, dst, count, MPI_DOUBLE, c); },
                   [&](MPI_Request* r) { return MPI_Iallgather(src, count, MPI_DOUBLE, dst, count, MPI_DOUBLE, c, r); });
    traffic_.note("allgather", count, n);
    return a;
  }
  const MPI_Op op = to_mpi(h.b);
  // In place: this rank's block of the result is the buffer's first.
  double* buf = const_cast<double*>(data_of<double>(in, static_cast<long>(count) * n, "reduce_scatter"));
  run_collective("MPI_Reduce_scatter_block", "MPI_Ireduce_scatter_block",
                 [&] { return MPI_Reduce_scatter_block(MPI_IN_PLACE, buf, count, MPI_DOUBLE, op, c); },
                 [&](MPI_Request* r) { return MPI_Ireduce_scatter_block(MPI_IN_PLACE, buf, count, MPI_DOUBLE, op, c, r); });
  traffic_.note("reduce_scatter", count, n);
  in.resize(static_cast<std::size_t>(count) * sizeof(double));
  a.data = std::move(in);
  return a;
}

Answer Ops::point_to_point(const Header& h, const std::vector<char>& in) {
  const MPI_Comm c = comm(h.comm);
  const int n = size_of(c);
  if (h.a < 0 || h.a >= n) bad_request("point-to-point: peer " + std::to_string(h.a) + " out of range");
  const int peer = static_cast<int>(h.a), tag = tag_of(h.b);
  Answer a;
  if (h.kind == Kind::Send) {
    const long count = static_cast<long>(in.size() / sizeof(double));
    const double* src = data_of<double>(in, count, "send");
    std::int64_t header = count, verdict = 0;
    MPI_Request r[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    check_mpi(MPI_Issend(&header, 1, MPI_INT64_T, peer, header_tag(tag), c, &r[0]), "MPI_Issend");
    check_mpi(MPI_Irecv(&verdict, 1, MPI_INT64_T, peer, verdict_tag(tag), c, &r[1]), "MPI_Irecv");
    finish(r, 2, "send");
    a.reply.a = verdict;
    if (verdict != header) return a;
    check_mpi(MPI_Isend(src, count_of(count, "send"), MPI_DOUBLE, peer, payload_tag(tag), c, &r[0]), "MPI_Isend");
    finish(r, 1, "send");
    traffic_.note("send", count, n);
    return a;
  }
  const int count = count_of(h.c, "recv");
  std::int64_t header = 0, verdict = count;
  MPI_Request r[1] = {MPI_REQUEST_NULL};
  check_mpi(MPI_Irecv(&header, 1, MPI_INT64_T, peer, header_tag(tag), c, &r[0]), "MPI_Irecv");
  finish(r, 1, "recv");
  check_mpi(MPI_Isend(&verdict, 1, MPI_INT64_T, peer, verdict_tag(tag), c, &r[0]), "MPI_Isend");
  finish(r, 1, "recv");
  a.reply.a = header;
  if (header != verdict) return a;
  check_mpi(MPI_Irecv(doubles_of(a, static_cast<std::size_t>(count)), count, MPI_DOUBLE, peer, payload_tag(tag), c,
                      &r[0]), "MPI_Irecv");
  finish(r, 1, "recv");
  traffic_.note("recv", count, n);
  return a;
}

// The two links of a sendrecv progress on their own, as MPI_Sendrecv's do:
// the message in may arrive (its sender may be in a plain send) while the
// message out still waits for its receiver, so no wait of one link holds up
// the other. A link whose sizes disagree carries no payload; the other link
// still delivers, so its far rank is not left waiting.
Answer Ops::sendrecv(const Header& h, const std::vector<char>& in) {
  const MPI_Comm c = comm(h.comm);
  const int n = size_of(c);
  if (h.a < 0 || h.a >= n || h.c < 0 || h.c >= n) bad_request("sendrecv: peer out of range");
  const int dest = static_cast<int>(h.a), source = static_cast<int>(h.c);
  const int send_tag = tag_of(h.b), recv_tag = tag_of(h.d);
  const long send_count = static_cast<long>(in.size() / sizeof(double));
  const double* src = data_of<double>(in, send_count, "sendrecv");
  const int ns = count_of(send_count, "sendrecv"), nr = count_of(h.e, "sendrecv");
  Answer a;
  double* dst = doubles_of(a, static_cast<std::size_t>(nr));
  std::int64_t header_out = ns, header_in = 0, verdict_out = nr, verdict_in = 0;
  // Out: the header and the verdict, then the payload. In: the header, then the verdict and the payload.
  MPI_Request out_header = MPI_REQUEST_NULL, out_verdict = MPI_REQUEST_NULL, out_payload = MPI_REQUEST_NULL;
  MPI_Request in_header = MPI_REQUEST_NULL, in_verdict = MPI_REQUEST_NULL, in_payload = MPI_REQUEST_NULL;
  check_mpi(MPI_Isend(&header_out, 1, MPI_INT64_T, dest, header_tag(send_tag), c, &out_header), "MPI_Isend");
  check_mpi(MPI_Irecv(&verdict_in, 1, MPI_INT64_T, dest, verdict_tag(send_tag), c, &out_verdict), "MPI_Irecv");
  check_mpi(MPI_Irecv(&header_in, 1, MPI_INT64_T, source, header_tag(recv_tag), c, &in_header), "MPI_Irecv");
  bool out_settled = false, in_settled = false;  // the link's payload started, or refused
  bool out_ok = true, in_ok = true;
  auto finished = [](MPI_Request& r) { return request_done(r, "sendrecv"); };
  poll_until(
      [&] {
        if (!out_settled && finished(out_header) && finished(out_verdict)) {
          out_settled = true;
          out_ok = verdict_in == header_out;
          if (out_ok)
            check_mpi(MPI_Isend(src, ns, MPI_DOUBLE, dest, payload_tag(send_tag), c, &out_payload), "MPI_Isend");
        }
        if (!in_settled && finished(in_header)) {
          in_settled = true;
          in_ok = header_in == verdict_out;
          check_mpi(MPI_Isend(&verdict_out, 1, MPI_INT64_T, source, verdict_tag(recv_tag), c, &in_verdict),
                    "MPI_Isend");
          if (in_ok)
            check_mpi(MPI_Irecv(dst, nr, MPI_DOUBLE, source, payload_tag(recv_tag), c, &in_payload), "MPI_Irecv");
        }
        // Every request is tested each time round, so that none waits on another.
        const bool payload_out = finished(out_payload), verdict_out_sent = finished(in_verdict);
        const bool payload_in = finished(in_payload);
        return out_settled && in_settled && payload_out && verdict_out_sent && payload_in;
      },
      Idle::YieldThenSleep);
  if (out_ok && in_ok) traffic_.note("sendrecv", ns, n);
  if (!in_ok) a.data.clear();
  a.reply.a = verdict_in;
  a.reply.b = header_in;
  return a;
}

Answer Ops::request(const Header& h, const std::vector<char>& in) {
  if (h.kind == Kind::Istart) {
    const MPI_Comm c = comm(h.comm);
    const int count = count_of(h.a, "iallreduce");
    const MPI_Op op = to_mpi(h.b);
    data_of<double>(in, count, "iallreduce");
    InFlight& f = requests_[next_request_];
    f.src = in;
    double* dst = doubles_of(f.result, static_cast<std::size_t>(count));
    check_mpi(MPI_Iallreduce(f.src.data(), dst, count, MPI_DOUBLE, op, c, &f.mpi), "MPI_Iallreduce");
    traffic_.note("iallreduce", count, size_of(c));
    traffic_.started(count);
    Answer a;
    a.reply.a = next_request_++;
    return a;
  }
  const auto at = requests_.find(h.a);
  if (at == requests_.end()) bad_request("no request " + std::to_string(h.a));
  InFlight& f = at->second;
  if (h.kind == Kind::Test && !request_done(f.mpi, "MPI_Test")) {
    traffic_.tested_running(h.a);
    return {};
  }
  // A peer may still be computing its backward: sleep between polls after a while.
  if (h.kind == Kind::Wait) {
    traffic_.waited();
    wait_polling(f.mpi, "MPI_Wait", Idle::YieldThenSleep);
  }
  Answer a = std::move(f.result);
  a.reply.a = 1;
  requests_.erase(at);
  return a;
}

void Ops::finish_requests() {
  for (auto& [id, f] : requests_) {
    (void)id;
    MPI_Wait(&f.mpi, MPI_STATUS_IGNORE);
  }
  requests_.clear();
}

}  // namespace dtrain::side
