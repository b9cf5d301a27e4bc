// comm_side_p2p.cpp: the side's point-to-point messages and nonblocking
// requests (comm_side_ops.h). Each message is checked for agreed sizes
// before its payload moves; a refused one is still in the account.
#include <string>

#include "comm_side_checks.h"
#include "comm_side_ops.h"

namespace dtrain::side {

using link::Header;
using link::Kind;

Answer Ops::point_to_point(const Header& h, const std::vector<char>& in) {
  const MPI_Comm c = comm(h.comm);
  const int n = size_of(c);
  const std::int64_t other = h.kind == Kind::Send ? h.ask.send.dest : h.ask.recv.source;
  if (other < 0 || other >= n) bad_request("point-to-point: peer " + std::to_string(other) + " out of range");
  const int peer = static_cast<int>(other), tag = tag_of(h.kind == Kind::Send ? h.ask.send.tag : h.ask.recv.tag);
  Answer a;
  if (h.kind == Kind::Send) {
    const long count = static_cast<long>(in.size() / sizeof(double));
    const double* src = data_of<double>(in, count, "send");
    std::int64_t header = count, verdict = 0;
    MPI_Request r[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    check_mpi(MPI_Issend(&header, 1, MPI_INT64_T, peer, header_tag(tag), c, &r[0]), "MPI_Issend");
    check_mpi(MPI_Irecv(&verdict, 1, MPI_INT64_T, peer, verdict_tag(tag), c, &r[1]), "MPI_Irecv");
    finish(r, 2, "send");
    a.reply.answer.send.receiver_count = verdict;
    if (verdict != header) {
      kit_request(facts::kRequestRefused, count, n);  // the count still went across
      return a;
    }
    check_mpi(MPI_Isend(src, count_of(count, "send"), MPI_DOUBLE, peer, payload_tag(tag), c, &r[0]), "MPI_Isend");
    finish(r, 1, "send");
    traffic_.note(facts::kSend, count, n);
    return a;
  }
  const int count = count_of(h.ask.recv.count, "recv");
  std::int64_t header = 0, verdict = count;
  MPI_Request r[1] = {MPI_REQUEST_NULL};
  check_mpi(MPI_Irecv(&header, 1, MPI_INT64_T, peer, header_tag(tag), c, &r[0]), "MPI_Irecv");
  finish(r, 1, "recv");
  check_mpi(MPI_Isend(&verdict, 1, MPI_INT64_T, peer, verdict_tag(tag), c, &r[0]), "MPI_Isend");
  finish(r, 1, "recv");
  a.reply.answer.recv.sender_count = header;
  if (header != verdict) {
    kit_request(facts::kRequestRefused, count, n);
    return a;
  }
  check_mpi(MPI_Irecv(doubles_of(a, static_cast<std::size_t>(count)), count, MPI_DOUBLE, peer, payload_tag(tag), c,
                      &r[0]), "MPI_Irecv");
  finish(r, 1, "recv");
  traffic_.note(facts::kRecv, count, n);
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
  const link::ask::Sendrecv& f = h.ask.sendrecv;
  if (f.dest < 0 || f.dest >= n || f.source < 0 || f.source >= n) bad_request("sendrecv: peer out of range");
  const int dest = static_cast<int>(f.dest), source = static_cast<int>(f.source);
  const int send_tag = tag_of(f.send_tag), recv_tag = tag_of(f.recv_tag);
  const long send_count = static_cast<long>(in.size() / sizeof(double));
  const double* src = data_of<double>(in, send_count, "sendrecv");
  const int ns = count_of(send_count, "sendrecv"), nr = count_of(f.recv_count, "sendrecv");
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
      Idle::Yield);
  if (out_ok && in_ok)
    traffic_.note(facts::kSendrecv, ns, n);
  else
    kit_request(facts::kRequestRefused, out_ok ? nr : ns, n);
  if (!in_ok) a.data.clear();
  a.reply.answer.sendrecv = {verdict_in, header_in};
  return a;
}

Answer Ops::request(const Header& h, const std::vector<char>& in) {
  if (h.kind == Kind::Istart) {
    const MPI_Comm c = comm(h.comm);
    agree(h.comm, facts::kIallreduce, h.ask.istart.count, h.ask.istart.reduction);
    const int count = count_of(h.ask.istart.count, "iallreduce");
    const MPI_Op op = to_mpi(h.ask.istart.reduction);
    data_of<double>(in, count, "iallreduce");
    InFlight& f = requests_[next_request_];
    f.src = in;
    double* dst = doubles_of(f.result, static_cast<std::size_t>(count));
    check_mpi(MPI_Iallreduce(f.src.data(), dst, count, MPI_DOUBLE, op, c, &f.mpi), "MPI_Iallreduce");
    traffic_.note(facts::kIallreduce, count, size_of(c));
    traffic_.started(count);
    Answer a;
    a.reply.answer.istart.request = next_request_++;
    return a;
  }
  const std::int64_t id = h.ask.pending.request;
  const auto at = requests_.find(id);
  if (at == requests_.end()) bad_request("no request " + std::to_string(id));
  InFlight& f = at->second;
  if (h.kind == Kind::Test) kit_request(facts::kRequestTest, 0, 0);
  if (h.kind == Kind::Test && !request_done(f.mpi, "MPI_Test")) {
    traffic_.tested_running(id);
    return {};
  }
  // A peer may still be computing its backward: sleep between polls after a while.
  if (h.kind == Kind::Wait) {
    traffic_.note(facts::kWait, 0, 0);
    traffic_.waited();
    wait_polling(f.mpi, "MPI_Wait", Idle::Yield);
  }
  Answer a = std::move(f.result);
  if (h.kind == Kind::Test) a.reply.answer.test.complete = 1;
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
