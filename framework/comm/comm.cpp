// comm.cpp: the Communicator of comm.h: its collectives, each checked,
// recorded and counted (ledger.h), then carried out by the rank's MPI side
// (comm_link.h). The communicator's other files: comm_internal.h (what they
// share), comm_session.cpp, comm_agreement.cpp, comm_p2p.cpp and
// comm_request.cpp (the Request an iallreduce returns).
#include <chrono>
#include <cstring>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "call_context.h"
#include "comm_internal.h"
#include "ledger.h"

namespace dtrain {

namespace comm_detail {

Communicator::Handle& live(const std::unique_ptr<Communicator::Handle>& handle) {
  if (!handle) throw std::logic_error("this Communicator was moved from; use the one it was moved into");
  return *handle;
}

std::unique_ptr<Communicator::Handle> new_handle(const link::Reply& made, bool owned, std::string name,
                                                 std::vector<int> members) {
  static int next_id = 1;  // 0 is the world view's
  auto handle = std::make_unique<Communicator::Handle>();
  handle->comm = made.comm;
  handle->owned = owned;
  handle->id = owned || made.comm != 0 ? next_id++ : 0;  // a borrowed one (CommAccess::borrow) is counted apart
  handle->name = std::move(name);
  handle->members = std::move(members);
  handle->rank = static_cast<int>(made.answer.made.rank);
  handle->size = static_cast<int>(made.answer.made.size);
  return handle;
}

int to_count(long count, const char* call) {
  if (count < 0 || count > std::numeric_limits<int>::max())
    throw std::invalid_argument(std::string(call) + ": buffer of " + std::to_string(count) +
                                " elements is beyond MPI's int count");
  return static_cast<int>(count);
}

link::Reply ask(link::Header h, const void* in, std::size_t in_bytes, void* out, std::size_t out_capacity) {
  h.in_bytes = in_bytes;
  return link::call(h, in, out, out_capacity);
}

link::Header collective(link::Kind kind, std::int32_t comm, std::int64_t count, std::int64_t reduction,
                        bool one_rank) {
  link::Header h = link::request(kind, comm);
  h.ask.collective = {count, reduction, one_rank ? link::kOneRank : 0};
  return h;
}

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace comm_detail

namespace {

using namespace comm_detail;

std::int64_t reduction_of(Op op) {
  switch (op) {
    case Op::Sum:
    case Op::Min:
    case Op::Max: return static_cast<std::int64_t>(op);
  }
  throw std::invalid_argument("unknown reduction Op " + std::to_string(static_cast<int>(op)));
}

[[noreturn]] void size_mismatch(const char* call, const char* what, long expected, long got) {
  std::ostringstream msg;
  msg << call;
  if (const std::string function = ledger::function_now(); !function.empty()) msg << " in " << function;
  msg << ": " << what << " must have " << expected << " elements, got " << got;
  if (const std::string args = ledger::arguments_now(); !args.empty()) msg << " (its arguments: " << args << ")";
  throw std::invalid_argument(msg.str());
}

void require_distinct(const void* src, const void* dst, const char* call) {
  if (src == dst)
    throw std::invalid_argument(std::string(call) +
                                ": source and destination are the same object; pass a separate destination");
}

// Ring volume of one call, in bytes, per rank (see comm.h; the formula: kit/facts.py).
using facts::ring_bytes;
static_assert(facts::kValueBytes == sizeof(double), "the communicator moves doubles");

}  // namespace

Communicator::Communicator(std::unique_ptr<Handle> handle) : handle_(std::move(handle)) {}
Communicator::Communicator(Communicator&& other) noexcept = default;

Communicator& Communicator::operator=(Communicator&& other) noexcept {
  if (this != &other) {
    Communicator old(std::move(*this));
    handle_ = std::move(other.handle_);
    bytes_ = other.bytes_;
    other.bytes_ = 0;
  }
  return *this;
}

Communicator::~Communicator() {
  if (!handle_ || !handle_->owned || MpiSession::finalized()) return;
  try {
    ask(link::request(link::Kind::Free, handle_->comm));
  } catch (...) {
    // nothing to do with a failure in a destructor
  }
}

Communicator Communicator::world() {
  static const link::Reply hello = ask(link::request(link::Kind::Hello));
  auto handle = new_handle(hello, false, "world", {});
  for (int r = 0; r < handle->size; ++r) handle->members.push_back(r);
  return Communicator(std::move(handle));
}

int Communicator::rank() const { return live(handle_).rank; }
int Communicator::size() const { return live(handle_).size; }

void Communicator::barrier() {
  Call call(live(handle_), kBarrier, 0, kNoReduction, false);
  link::Header h = link::request(link::Kind::Barrier, live(handle_).comm);
  h.ask.barrier.idle = static_cast<std::int64_t>(link::Idle::Yield);
  ask(h);
  call.done(0);
}

// On one rank a collective's result is its input, and the copy is made
// here (link::kOneRank). No data crosses the link: while a case runs the
// side is told of the call, since a case's account holds every call; a
// trainer's one-rank collective moves nothing anywhere and costs no round trip.
static bool one_rank(const Communicator::Handle& h, link::Kind kind, std::int64_t n, std::int64_t reduction,
                     const double* src, double* dst, long values) {
  if (h.size != 1) return false;
  if (case_open()) ask(collective(kind, h.comm, n, reduction, true));
  if (values > 0 && dst != src) std::memmove(dst, src, static_cast<std::size_t>(values) * sizeof(double));
  return true;
}

void Communicator::all_reduce_raw(const double* src, double* dst, long count, Op op) {
  const std::int64_t reduction = reduction_of(op);
  const int n = to_count(count, "allreduce");
  Call call(live(handle_), kAllreduce, count, reduction, true, src);
  const std::size_t bytes_in = static_cast<std::size_t>(n) * sizeof(double);
  if (!one_rank(live(handle_), link::Kind::Allreduce, n, reduction, src, dst, n))
    ask(collective(link::Kind::Allreduce, live(handle_).comm, n, reduction), src, bytes_in, dst, bytes_in);
  const std::uint64_t bytes = ring_bytes(count, size(), 2);
  bytes_ += bytes;
  call.done(bytes);
}

void Communicator::all_gather_raw(const double* src, long count, double* dst) {
  const int n = to_count(count, "allgather");
  const int all = to_count(count * size(), "allgather");
  Call call(live(handle_), kAllgather, count, kNoReduction, true, src);
  if (!one_rank(live(handle_), link::Kind::Allgather, n, 0, src, dst, n))
    ask(collective(link::Kind::Allgather, live(handle_).comm, n, 0), src, static_cast<std::size_t>(n) * sizeof(double),
        dst, static_cast<std::size_t>(all) * sizeof(double));
  const std::uint64_t bytes = ring_bytes(count * size(), size(), 1);
  bytes_ += bytes;
  call.done(bytes);
}

void Communicator::reduce_scatter_raw(const double* src, double* dst, long block, Op op) {
  const std::int64_t reduction = reduction_of(op);
  const int n = to_count(block, "reduce_scatter");
  const int all = to_count(block * size(), "reduce_scatter");
  Call call(live(handle_), kReduceScatter, block, reduction, true, src, block * size());
  if (!one_rank(live(handle_), link::Kind::ReduceScatter, n, reduction, src, dst, n))
    ask(collective(link::Kind::ReduceScatter, live(handle_).comm, n, reduction), src,
        static_cast<std::size_t>(all) * sizeof(double), dst, static_cast<std::size_t>(n) * sizeof(double));
  const std::uint64_t bytes = ring_bytes(block * size(), size(), 1);
  bytes_ += bytes;
  call.done(bytes);
}

// The Matrix and Vector overloads differ only in type; each checks its sizes
// and hands the flat storage to the raw call.
template <typename T>
static void check_same(const char* call, const T& src, const T& dst) {
  require_distinct(&src, &dst, call);
  if (dst.size() != src.size()) size_mismatch(call, "dst", src.size(), dst.size());
}

void Communicator::allreduce(const Matrix& src, Matrix& dst, Op op) {
  check_same("allreduce", src, dst);
  all_reduce_raw(src.data(), dst.data(), src.size(), op);
}
void Communicator::allreduce(const Vector& src, Vector& dst, Op op) {
  check_same("allreduce", src, dst);
  all_reduce_raw(src.data(), dst.data(), src.size(), op);
}

Request Communicator::iallreduce(const Vector& src, Vector& dst, Op op) {
  check_same("iallreduce", src, dst);
  const std::int64_t reduction = reduction_of(op);
  const int n = to_count(src.size(), "iallreduce");
  auto state = std::make_unique<Request::State>();
  Call call(live(handle_), kIallreduce, src.size(), reduction, true, src.data());
  state->start = steady_seconds();
  state->dst = dst.data();
  state->dst_count = n;
  link::Header h = link::request(link::Kind::Istart, live(handle_).comm);
  h.ask.istart = {n, reduction};
  state->mpi = ask(h, src.data(), static_cast<std::size_t>(n) * sizeof(double)).answer.istart.request;
  state->bytes = ring_bytes(src.size(), size(), 2);
  bytes_ += state->bytes;
  request_started(*state);
  call.done(state->bytes);
  return Request(std::move(state));
}

void Communicator::allgather(const Matrix& src, Matrix& dst) {
  require_distinct(&src, &dst, "allgather");
  if (dst.size() != src.size() * size()) size_mismatch("allgather", "dst (src.size() * size())", src.size() * size(), dst.size());
  all_gather_raw(src.data(), src.size(), dst.data());
}
void Communicator::allgather(const Vector& src, Vector& dst) {
  require_distinct(&src, &dst, "allgather");
  if (dst.size() != src.size() * size()) size_mismatch("allgather", "dst (src.size() * size())", src.size() * size(), dst.size());
  all_gather_raw(src.data(), src.size(), dst.data());
}

void Communicator::reduce_scatter(const Matrix& src, Matrix& dst, Op op) {
  require_distinct(&src, &dst, "reduce_scatter");
  if (src.size() != dst.size() * size()) size_mismatch("reduce_scatter", "src (dst.size() * size())", dst.size() * size(), src.size());
  reduce_scatter_raw(src.data(), dst.data(), dst.size(), op);
}
void Communicator::reduce_scatter(const Vector& src, Vector& dst, Op op) {
  require_distinct(&src, &dst, "reduce_scatter");
  if (src.size() != dst.size() * size()) size_mismatch("reduce_scatter", "src (dst.size() * size())", dst.size() * size(), src.size());
  reduce_scatter_raw(src.data(), dst.data(), dst.size(), op);
}

Communicator Communicator::split(int color, int key) {
  if (color < 0) throw std::invalid_argument("split: color must be >= 0, got " + std::to_string(color));
  std::vector<int> members(static_cast<std::size_t>(size()));
  link::Reply made{};
  {
    Call call(live(handle_), kSplit, 0, kNoReduction, false);
    link::Header h = link::request(link::Kind::Split, handle_->comm);
    h.ask.split = {color, key};
    made = ask(h, nullptr, 0, members.data(), members.size() * sizeof(int));
    call.done(0);
  }
  members.resize(static_cast<std::size_t>(made.answer.made.size));
  return Communicator(new_handle(made, true,
                                 "split(color " + std::to_string(color) + ", key " + std::to_string(key) + ") of " +
                                     handle_->name,
                                 std::move(members)));
}

std::uint64_t Communicator::bytes_transferred() const { return bytes_; }

}  // namespace dtrain
