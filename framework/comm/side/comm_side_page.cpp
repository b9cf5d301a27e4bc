// comm_side_page.cpp: what the side writes on its page of the student's
// process (side_page.h), around each request of that process in the driven
// mode: the call in flight, the requests left running, and the case's calls
// per communicator, so that a hung case's roll-call can say what this rank
// was doing from what the side saw, never from what the process claims.
#include <algorithm>
#include <cstring>
#include <limits>

#include "comm_side_checks.h"
#include "comm_side_ops.h"
#include "sent_digest.h"
#include "function_id.h"

namespace dtrain::side {

using link::Kind;

namespace {

// Whether a request of this kind carries values it sends (its payload's first element is one).
bool sends_values(Kind k) {
  return k == Kind::Allreduce || k == Kind::Allgather || k == Kind::ReduceScatter || k == Kind::Send ||
         k == Kind::Sendrecv || k == Kind::Istart;
}

// The operation a request of the student's is, as the ledger names it; -1 for none it shows.
std::int64_t operation_of(const link::Header& h) {
  switch (h.kind) {
    case Kind::Allreduce: return facts::kAllreduce;
    case Kind::Allgather: return facts::kAllgather;
    case Kind::ReduceScatter: return facts::kReduceScatter;
    case Kind::Barrier: return static_cast<Idle>(h.ask.barrier.idle) == Idle::Sleep ? std::int64_t{-1} : std::int64_t{facts::kBarrier};
    case Kind::Split: return facts::kSplit;
    case Kind::Send: return facts::kSend;
    case Kind::Recv: return facts::kRecv;
    case Kind::Sendrecv: return facts::kSendrecv;
    case Kind::Istart: return facts::kIallreduce;
    case Kind::Wait: return facts::kWait;
    default: return -1;
  }
}

}  // namespace

Answer Ops::handle(const link::Header& h, std::vector<char>& in) {
  if (page_ == nullptr || checked_function_ == nullptr) return dispatch(h, in);
  page_begins(h, in);
  try {
    Answer a = dispatch(h, in);
    page_ends(h, &a);
    return a;
  } catch (...) {
    page_ends(h, nullptr);
    throw;
  }
}

side_page::Comm* Ops::page_comm(std::int64_t comm) {
  side_page::Page& p = *page_;
  for (std::int64_t i = 0; i < p.comms; ++i)
    if (p.per_comm[i].comm == comm) return &p.per_comm[i];
  if (p.comms == side_page::kMostComms) return nullptr;
  side_page::Comm& c = p.per_comm[p.comms++];
  c = {comm, -1, 0, 0, 0, 0};
  return &c;
}

void Ops::page_filter(std::int64_t code) {
  if (page_ == nullptr || page_->student_filter != 0) return;  // the first Serve's word only
  side_page::begin_write(*page_);
  page_->student_filter = code;
  side_page::end_write(*page_);
}

void Ops::page_student_gone() {
  if (page_ == nullptr || page_->student_gone != 0) return;
  side_page::begin_write(*page_);
  page_->student_gone = 1;
  side_page::end_write(*page_);
}

void Ops::log_event(link::RequestEvent event, std::int64_t op, std::int64_t comm, std::int64_t dest,
                    std::int64_t source, std::int64_t count, std::int64_t request, std::int64_t failed_tests,
                    std::int64_t send_tag, std::int64_t recv_tag, std::int64_t first, std::int64_t sum) {
  // A call that floods the side with requests can't grow its memory: past
  // the cap they are counted (link::Finding::Unlogged, at the call's return).
  if (logged_in_call_ >= link::kMostLoggedRequests) {
    ++unlogged_in_call_;
    return;
  }
  ++logged_in_call_;
  findings_.insert(findings_.end(), {static_cast<std::int64_t>(link::Finding::Request), static_cast<std::int64_t>(event),
                                     op, comm, dest, source, count, request, failed_tests, send_tag, recv_tag, first, sum});
}

void Ops::log_request(const link::Header& h, const Answer& answer, std::int64_t op) {
  // The call's own record of what it did (link::Finding::Request), for the
  // harness's log of the call (ledger::CallLog), as the ledger logs it in
  // one process: a call's elements sent, or received by a recv; a request's
  // end as wait() or a test() saw it, with the tests in this call that had
  // found it running before.
  const side_page::Page& p = *page_;
  if (op >= 0 && op != facts::kWait) {
    const bool sends = h.kind == Kind::Send || h.kind == Kind::Sendrecv;
    const std::int64_t count = sends ? static_cast<std::int64_t>(h.in_bytes / sizeof(double)) : p.count;
    const std::int64_t id = h.kind == Kind::Istart ? answer.reply.answer.istart.request : 0;
    if (id != 0) logged_[id] = {h.comm, count};
    log_event(link::RequestEvent::Call, op, h.comm, p.to_local, p.from_local, count, id, 0, p.send_tag, p.recv_tag,
              first_sent_, sum_sent_);
    return;
  }
  if (h.kind != Kind::Wait && h.kind != Kind::Test) return;
  const std::int64_t id = h.ask.pending.request;
  const auto started = logged_.find(id);
  if (started == logged_.end()) return;  // none of this process's calls started it
  if (h.kind == Kind::Test && answer.reply.answer.test.complete == 0) {
    ++tested_running_[id];
    return;
  }
  const auto tests = tested_running_.find(id);
  const std::int64_t failed = tests == tested_running_.end() ? 0 : tests->second;
  if (tests != tested_running_.end()) tested_running_.erase(tests);
  log_event(h.kind == Kind::Wait ? link::RequestEvent::Waited : link::RequestEvent::Tested, facts::kIallreduce,
            started->second.comm, -1, -1, started->second.count, id, failed);
  logged_.erase(started);
}

void Ops::call_returns() {
  // Each request a test() of this call found running, and that did not complete in it.
  for (const auto& [id, tests] : tested_running_) {
    const auto started = logged_.find(id);
    if (started != logged_.end())
      log_event(link::RequestEvent::TestedRunning, facts::kIallreduce, started->second.comm, -1, -1,
                started->second.count, id, tests);
  }
  tested_running_.clear();
  if (unlogged_in_call_ > 0)
    findings_.insert(findings_.end(), {static_cast<std::int64_t>(link::Finding::Unlogged), unlogged_in_call_});
  logged_in_call_ = unlogged_in_call_ = 0;
}

void Ops::page_case_begins() {
  if (page_ == nullptr) return;
  side_page::begin_write(*page_);
  // The table is the case's (side_page.h, kMostComms): a job's cases make
  // more communicators than it holds. One the harness hands a call is named
  // by the harness; one the student's code splits in the case, by its origin.
  page_->comms = 0;
  side_page::end_write(*page_);
}

void Ops::page_begins(const link::Header& h, const std::vector<char>& in) {
  // What the call sends, before MPI writes over it in place: its first
  // element and its sum, for the call's log (a NaN's bits where it sends nothing).
  const comm_detail::SentDigest d =
      sends_values(h.kind) ? comm_detail::digest_of(in.data(), static_cast<long>(in.size() / sizeof(double)))
                           : comm_detail::SentDigest{};
  std::memcpy(&first_sent_, &d.first, sizeof d.first);
  std::memcpy(&sum_sent_, &d.sum, sizeof d.sum);
  const std::int64_t op = operation_of(h);
  if (op < 0) return;
  side_page::Page& p = *page_;
  side_page::begin_write(p);
  p.op = op;
  p.comm = h.comm;
  p.group = group_of(h.comm);
  p.function = function_id(checked_function_->c_str());
  p.seq = facts::is_collective(op) ? sequence_[h.comm] + 1 : 0;
  p.to = p.to_local = p.send_tag = p.from = p.from_local = p.recv_tag = -1;
  p.waited = 0;
  p.count = 0;
  if (h.kind == Kind::Allreduce || h.kind == Kind::Allgather || h.kind == Kind::ReduceScatter) p.count = h.ask.collective.count;
  if (h.kind == Kind::Istart) p.count = h.ask.istart.count;
  if (h.kind == Kind::Wait) p.waited = h.ask.pending.request;
  if (facts::is_point_to_point(op)) {
    const std::vector<int> members = world_ranks_of(comm(h.comm));
    auto world = [&](std::int64_t r) { return r >= 0 && r < static_cast<std::int64_t>(members.size()) ? members[r] : r; };
    // A send's elements, as the ledger counts them: what it sends.
    if (h.kind == Kind::Send || h.kind == Kind::Sendrecv) p.count = static_cast<std::int64_t>(h.in_bytes / sizeof(double));
    if (h.kind == Kind::Send) p.to_local = h.ask.send.dest, p.send_tag = h.ask.send.tag;
    if (h.kind == Kind::Recv) p.from_local = h.ask.recv.source, p.recv_tag = h.ask.recv.tag, p.count = h.ask.recv.count;
    if (h.kind == Kind::Sendrecv) {
      p.to_local = h.ask.sendrecv.dest, p.send_tag = h.ask.sendrecv.send_tag;
      p.from_local = h.ask.sendrecv.source, p.recv_tag = h.ask.sendrecv.recv_tag;
    }
    if (p.to_local >= 0) p.to = world(p.to_local);
    if (p.from_local >= 0) p.from = world(p.from_local);
  }
  p.active = h.kind != Kind::Istart;  // an iallreduce starts and returns: nothing waits in it
  side_page::end_write(p);
}

void Ops::page_ends(const link::Header& h, const Answer* answer) {
  const std::int64_t op = operation_of(h);
  side_page::Page& p = *page_;
  side_page::begin_write(p);
  p.active = 0;
  if (op >= 0 && op != facts::kWait) {
    if (side_page::Comm* c = page_comm(h.comm)) (facts::is_collective(op) ? c->collectives : c->point_to_point) += 1;
  }
  const bool ok = answer != nullptr && answer->reply.status == link::Status::Ok;
  if (ok) log_request(h, *answer, op);
  if (ok && h.kind == Kind::Split)
    if (side_page::Comm* made = page_comm(answer->reply.comm))
      made->parent = h.comm, made->color = h.ask.split.color, made->key = h.ask.split.key;
  if (ok && h.kind == Kind::Istart && p.requests < side_page::kMostRequests)
    p.request[p.requests++] = {answer->reply.answer.istart.request, facts::kIallreduce, h.comm, p.seq, p.count, p.function};
  const bool completed = h.kind == Kind::Wait || (h.kind == Kind::Test && ok && answer->reply.answer.test.complete != 0);
  if (completed) {
    side_page::Request* end = std::remove_if(p.request, p.request + p.requests,
                                             [&](const side_page::Request& r) { return r.id == h.ask.pending.request; });
    p.requests = end - p.request;
  }
  side_page::end_write(p);
}

}  // namespace dtrain::side
