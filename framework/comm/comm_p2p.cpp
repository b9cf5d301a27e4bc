// comm_p2p.cpp: the Communicator's point-to-point calls (comm.h), for the
// extension parts: send, recv and sendrecv, each checked, recorded and
// counted like a collective (ledger.h), but never agreed on: only the two
// ranks of a message know of it.
//
// One message is three MPI messages on tags derived from the caller's:
//   header   the sender's element count (a synchronous send: the sender waits
//            until the receiver has taken it, so a cycle of sends deadlocks
//            on every MPI and at every size, as comm.h promises)
//   verdict  the receiver's element count, back to the sender
//   payload  the elements, only if the two counts are equal
// So a size mismatch fails both ranks, naming both sizes and the tag, before
// any element moves.
#include <sstream>
#include <stdexcept>
#include <string>

#include "call_context.h"
#include "comm_internal.h"
#include "ledger.h"

namespace dtrain {

namespace {

using namespace comm_detail;

constexpr int kTagsPerMessage = 3;  // header, verdict, payload
int header_tag(int tag) { return kTagsPerMessage * tag; }
int verdict_tag(int tag) { return kTagsPerMessage * tag + 1; }
int payload_tag(int tag) { return kTagsPerMessage * tag + 2; }

// The largest tag comm.h allows: its three tags stay within the 32767 every MPI offers.
constexpr int kMostTag = 10000;
static_assert(kTagsPerMessage * kMostTag + kTagsPerMessage - 1 <= 32767, "beyond MPI's guaranteed tags");

std::string in_function() {
  const std::string function = ledger::function_now();
  return function.empty() ? std::string() : " in " + function;
}

void check_peer(const Communicator::Handle& h, const char* call, const char* role, int peer, bool self_ok) {
  if (peer < 0 || peer >= h.size)
    throw std::invalid_argument(std::string(call) + in_function() + ": " + role + " must be a rank of " + h.name +
                                ", 0.." + std::to_string(h.size - 1) + ", got " + std::to_string(peer));
  if (!self_ok && peer == h.rank)
    throw std::invalid_argument(std::string(call) + in_function() + ": " + role + " is this rank (" +
                                std::to_string(peer) + "); a " + call + " to itself would wait forever");
}

void check_tag(const char* call, int tag) {
  if (tag < 0 || tag > kMostTag)
    throw std::invalid_argument(std::string(call) + in_function() + ": tag must be in 0.." +
                                std::to_string(kMostTag) + ", got " + std::to_string(tag));
}

// Both ranks of a message that disagree on its size say so alike.
[[noreturn]] void size_disagreement(const char* call, int sender, int receiver, int tag, long sent, long expected) {
  std::ostringstream msg;
  msg << call << in_function() << ": rank " << sender << " sends " << sent << " elements to rank " << receiver
      << " (tag " << tag << "), whose recv expects " << expected << " (the size of its dst); no element moved";
  if (const std::string args = ledger::arguments_now(); !args.empty()) msg << " (its arguments: " << args << ")";
  throw std::invalid_argument(msg.str());
}

// Waits for every started request. A rank may wait long for its peer (a
// pipeline's bubble, a cycle of sends), so after a while it sleeps between
// polls (comm_internal.h), on every MPI.
void finish(MPI_Request* requests, int n, const char* call) {
  for (int i = 0; i < n; ++i) wait_polling(requests[i], call, Idle::YieldThenSleep);
}

std::uint64_t bytes_of(long count) { return static_cast<std::uint64_t>(count) * sizeof(double); }

}  // namespace

void Communicator::send_raw(const double* src, long count, int dest, int tag) {
  Handle& h = live(handle_);
  check_peer(h, "send", "dest", dest, false);
  check_tag("send", tag);
  const int n = to_count(count, "send");
  Call call(h, kSend, count, Peers{dest, -1, tag, -1});
  std::int64_t header = count, verdict = 0;
  MPI_Request r[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  check_mpi(MPI_Issend(&header, 1, MPI_INT64_T, dest, header_tag(tag), h.comm, &r[0]), "MPI_Issend");
  check_mpi(MPI_Irecv(&verdict, 1, MPI_INT64_T, dest, verdict_tag(tag), h.comm, &r[1]), "MPI_Irecv");
  finish(r, 2, "send");
  if (verdict != header) size_disagreement("send", h.rank, dest, tag, count, static_cast<long>(verdict));
  check_mpi(MPI_Isend(src, n, MPI_DOUBLE, dest, payload_tag(tag), h.comm, &r[0]), "MPI_Isend");
  finish(r, 1, "send");
  bytes_ += bytes_of(count);
  call.done(bytes_of(count));
}

void Communicator::recv_raw(double* dst, long count, int source, int tag) {
  Handle& h = live(handle_);
  check_peer(h, "recv", "source", source, false);
  check_tag("recv", tag);
  const int n = to_count(count, "recv");
  Call call(h, kRecv, count, Peers{-1, source, -1, tag});
  std::int64_t header = 0, verdict = count;
  MPI_Request r[1] = {MPI_REQUEST_NULL};
  check_mpi(MPI_Irecv(&header, 1, MPI_INT64_T, source, header_tag(tag), h.comm, &r[0]), "MPI_Irecv");
  finish(r, 1, "recv");
  check_mpi(MPI_Isend(&verdict, 1, MPI_INT64_T, source, verdict_tag(tag), h.comm, &r[0]), "MPI_Isend");
  finish(r, 1, "recv");
  if (header != verdict) size_disagreement("recv", source, h.rank, tag, static_cast<long>(header), count);
  check_mpi(MPI_Irecv(dst, n, MPI_DOUBLE, source, payload_tag(tag), h.comm, &r[0]), "MPI_Irecv");
  finish(r, 1, "recv");
  call.done(0);
}

// The two links of a sendrecv progress on their own, as MPI_Sendrecv's do:
// the message in may arrive (its sender may be in a plain send) while the
// message out still waits for its receiver, so no wait of one link holds up
// the other. A link whose sizes disagree carries no payload; the other link
// still delivers, so its far rank is not left waiting.
void Communicator::sendrecv_raw(const double* src, long send_count, int dest, int send_tag, double* dst,
                                long recv_count, int source, int recv_tag) {
  Handle& h = live(handle_);
  check_peer(h, "sendrecv", "dest", dest, true);
  check_peer(h, "sendrecv", "source", source, true);
  check_tag("sendrecv", send_tag);
  check_tag("sendrecv", recv_tag);
  const int ns = to_count(send_count, "sendrecv"), nr = to_count(recv_count, "sendrecv");
  Call call(h, kSendrecv, send_count, Peers{dest, source, send_tag, recv_tag});
  std::int64_t header_out = send_count, header_in = 0, verdict_out = recv_count, verdict_in = 0;
  // Out: the header and the verdict, then the payload. In: the header, then the verdict and the payload.
  MPI_Request out_header = MPI_REQUEST_NULL, out_verdict = MPI_REQUEST_NULL, out_payload = MPI_REQUEST_NULL;
  MPI_Request in_header = MPI_REQUEST_NULL, in_verdict = MPI_REQUEST_NULL, in_payload = MPI_REQUEST_NULL;
  check_mpi(MPI_Isend(&header_out, 1, MPI_INT64_T, dest, header_tag(send_tag), h.comm, &out_header), "MPI_Isend");
  check_mpi(MPI_Irecv(&verdict_in, 1, MPI_INT64_T, dest, verdict_tag(send_tag), h.comm, &out_verdict), "MPI_Irecv");
  check_mpi(MPI_Irecv(&header_in, 1, MPI_INT64_T, source, header_tag(recv_tag), h.comm, &in_header), "MPI_Irecv");
  bool out_settled = false, in_settled = false;  // the link's payload started, or refused
  bool out_ok = true, in_ok = true;
  auto finished = [](MPI_Request& r) { return request_done(r, "sendrecv"); };
  poll_until(
      [&] {
        if (!out_settled && finished(out_header) && finished(out_verdict)) {
          out_settled = true;
          out_ok = verdict_in == header_out;
          if (out_ok)
            check_mpi(MPI_Isend(src, ns, MPI_DOUBLE, dest, payload_tag(send_tag), h.comm, &out_payload), "MPI_Isend");
        }
        if (!in_settled && finished(in_header)) {
          in_settled = true;
          in_ok = header_in == verdict_out;
          check_mpi(MPI_Isend(&verdict_out, 1, MPI_INT64_T, source, verdict_tag(recv_tag), h.comm, &in_verdict),
                    "MPI_Isend");
          if (in_ok)
            check_mpi(MPI_Irecv(dst, nr, MPI_DOUBLE, source, payload_tag(recv_tag), h.comm, &in_payload), "MPI_Irecv");
        }
        // Every request is tested each time round, so that none waits on another.
        const bool payload_out = finished(out_payload), verdict_out_sent = finished(in_verdict);
        const bool payload_in = finished(in_payload);
        return out_settled && in_settled && payload_out && verdict_out_sent && payload_in;
      },
      Idle::YieldThenSleep);
  if (!out_ok) size_disagreement("sendrecv", h.rank, dest, send_tag, send_count, static_cast<long>(verdict_in));
  if (!in_ok) size_disagreement("sendrecv", source, h.rank, recv_tag, static_cast<long>(header_in), recv_count);
  bytes_ += bytes_of(send_count);
  call.done(bytes_of(send_count));
}

// The Matrix and Vector overloads differ only in type.
template <typename T>
static void require_distinct_buffers(const T& src, const T& dst) {
  if (&src == &dst)
    throw std::invalid_argument("sendrecv: source and destination are the same object; pass a separate destination");
}

void Communicator::send(const Matrix& src, int dest, int tag) { send_raw(src.data(), src.size(), dest, tag); }
void Communicator::send(const Vector& src, int dest, int tag) { send_raw(src.data(), src.size(), dest, tag); }
void Communicator::recv(Matrix& dst, int source, int tag) { recv_raw(dst.data(), dst.size(), source, tag); }
void Communicator::recv(Vector& dst, int source, int tag) { recv_raw(dst.data(), dst.size(), source, tag); }

void Communicator::sendrecv(const Matrix& src, int dest, int send_tag, Matrix& dst, int source, int recv_tag) {
  require_distinct_buffers(src, dst);
  sendrecv_raw(src.data(), src.size(), dest, send_tag, dst.data(), dst.size(), source, recv_tag);
}
void Communicator::sendrecv(const Vector& src, int dest, int send_tag, Vector& dst, int source, int recv_tag) {
  require_distinct_buffers(src, dst);
  sendrecv_raw(src.data(), src.size(), dest, send_tag, dst.data(), dst.size(), source, recv_tag);
}

}  // namespace dtrain
