// comm_p2p.cpp: the Communicator's point-to-point calls (comm.h), for the
// extension parts: send, recv and sendrecv, each checked, recorded and
// counted like a collective (ledger.h), but never agreed on: only the two
// ranks of a message know of it.
//
// The rank's MPI side carries each message as three MPI messages on tags
// derived from the caller's (side/comm_side_ops.cpp):
//   header   the sender's element count (a synchronous send: the sender waits
//            until the receiver has taken it, so a cycle of sends deadlocks
//            on every MPI and at every size, as comm.h promises)
//   verdict  the receiver's element count, back to the sender
//   payload  the elements, only if the two counts are equal
// and answers with the other end's count. So a size mismatch fails both
// ranks, naming both sizes and the tag, before any element moves.
#include <sstream>
#include <stdexcept>
#include <string>

#include "call_context.h"
#include "comm_internal.h"
#include "comm_link.h"
#include "ledger.h"

namespace dtrain {

namespace {

using namespace comm_detail;

// The largest tag comm.h allows (the side turns each into three of MPI's).
constexpr int kMostTag = 10000;

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

std::uint64_t bytes_of(long count) { return static_cast<std::uint64_t>(count) * sizeof(double); }

}  // namespace

void Communicator::send_raw(const double* src, long count, int dest, int tag) {
  Handle& h = live(handle_);
  check_peer(h, "send", "dest", dest, false);
  check_tag("send", tag);
  const int n = to_count(count, "send");
  Call call(h, kSend, count, Peers{dest, -1, tag, -1}, src);
  link::Header request = link::request(link::Kind::Send, h.comm);
  request.ask.send = {dest, tag};
  const long verdict =
      static_cast<long>(ask(request, src, static_cast<std::size_t>(n) * sizeof(double)).answer.send.receiver_count);
  if (verdict != count) size_disagreement("send", h.rank, dest, tag, count, verdict);
  bytes_ += bytes_of(count);
  call.done(bytes_of(count));
}

void Communicator::recv_raw(double* dst, long count, int source, int tag) {
  Handle& h = live(handle_);
  check_peer(h, "recv", "source", source, false);
  check_tag("recv", tag);
  const int n = to_count(count, "recv");
  Call call(h, kRecv, count, Peers{-1, source, -1, tag});
  link::Header request = link::request(link::Kind::Recv, h.comm);
  request.ask.recv = {source, tag, n};
  const long header = static_cast<long>(
      ask(request, nullptr, 0, dst, static_cast<std::size_t>(n) * sizeof(double)).answer.recv.sender_count);
  if (header != count) size_disagreement("recv", source, h.rank, tag, header, count);
  call.done(0);
}

// The two links of a sendrecv progress on their own, as MPI_Sendrecv's do
// (side/comm_side_ops.cpp); a link whose sizes disagree carries no payload, and
// the other link still delivers, so its far rank is not left waiting.
void Communicator::sendrecv_raw(const double* src, long send_count, int dest, int send_tag, double* dst,
                                long recv_count, int source, int recv_tag) {
  Handle& h = live(handle_);
  check_peer(h, "sendrecv", "dest", dest, true);
  check_peer(h, "sendrecv", "source", source, true);
  check_tag("sendrecv", send_tag);
  check_tag("sendrecv", recv_tag);
  const int ns = to_count(send_count, "sendrecv"), nr = to_count(recv_count, "sendrecv");
  Call call(h, kSendrecv, send_count, Peers{dest, source, send_tag, recv_tag}, src);
  link::Header request = link::request(link::Kind::Sendrecv, h.comm);
  request.ask.sendrecv = {dest, send_tag, source, recv_tag, nr};
  const link::Reply answer = ask(request, src, static_cast<std::size_t>(ns) * sizeof(double), dst,
                                 static_cast<std::size_t>(nr) * sizeof(double));
  const long verdict_in = static_cast<long>(answer.answer.sendrecv.receiver_count);
  const long header_in = static_cast<long>(answer.answer.sendrecv.sender_count);
  const bool out_ok = verdict_in == send_count, in_ok = header_in == recv_count;
  if (!out_ok) size_disagreement("sendrecv", h.rank, dest, send_tag, send_count, verdict_in);
  if (!in_ok) size_disagreement("sendrecv", source, h.rank, recv_tag, header_in, recv_count);
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
