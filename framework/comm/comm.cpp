// comm.cpp: the Communicator of comm.h: its collectives, each checked,
// recorded and counted (ledger.h), and MPI's calls behind them. The other
// files that name MPI are the communicator's too: comm_internal.h (what they
// share), comm_session.cpp, comm_agreement.cpp, comm_p2p.cpp and
// comm_request.cpp (the Request an iallreduce returns).
#include <sched.h>

#include <chrono>
#include <ctime>
#include <functional>
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

void check_mpi(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(rc, text, &length) != MPI_SUCCESS) length = 0;
  throw std::runtime_error(std::string(call) + " failed: " + std::string(text, static_cast<size_t>(length)));
}

Communicator::Handle& live(const std::unique_ptr<Communicator::Handle>& handle) {
  if (!handle) throw std::logic_error("this Communicator was moved from; use the one it was moved into");
  return *handle;
}

std::unique_ptr<Communicator::Handle> new_handle(MPI_Comm comm, bool owned, std::string name,
                                                 std::vector<int> members) {
  static int next_id = 1;  // 0 is the world view's
  auto handle = std::make_unique<Communicator::Handle>();
  handle->comm = comm;
  handle->owned = owned;
  handle->id = owned ? next_id++ : 0;
  handle->name = std::move(name);
  handle->members = std::move(members);
  check_mpi(MPI_Comm_rank(comm, &handle->rank), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(comm, &handle->size), "MPI_Comm_size");
  return handle;
}

int to_count(long count, const char* call) {
  if (count < 0 || count > std::numeric_limits<int>::max())
    throw std::invalid_argument(std::string(call) + ": buffer of " + std::to_string(count) +
                                " elements is beyond MPI's int count");
  return static_cast<int>(count);
}

void poll_until(const std::function<bool()>& done, Idle idle) {
  constexpr long kPollsBeforeIdle = 100;
  constexpr double kYieldSeconds = 0.05;  // YieldThenSleep: a wait longer than this has a peer elsewhere
  double idle_since = 0;
  for (long polls = 0;; ++polls) {
    if (done()) return;
    if (polls < kPollsBeforeIdle) continue;
    if (idle == Idle::YieldThenSleep) {
      if (polls == kPollsBeforeIdle) idle_since = steady_seconds();
      if (polls % 256 == 0 && steady_seconds() - idle_since > kYieldSeconds) idle = Idle::Sleep;
    }
    if (idle != Idle::Sleep) {
      sched_yield();
    } else {
      timespec pause{0, 500000};  // 0.5 ms
      nanosleep(&pause, nullptr);
    }
  }
}

bool request_done(MPI_Request& request, const char* call) {
  int done = 0;
  check_mpi(MPI_Test(&request, &done, MPI_STATUS_IGNORE), call);
  return done != 0;
}

void wait_polling(MPI_Request& request, const char* call, Idle idle) {
  poll_until([&] { return request_done(request, call); }, idle);
}

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace comm_detail

namespace {

using namespace comm_detail;

MPI_Op to_mpi(Op op) {
  switch (op) {
    case Op::Sum: return MPI_SUM;
    case Op::Min: return MPI_MIN;
    case Op::Max: return MPI_MAX;
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

std::vector<int> world_ranks_of(MPI_Comm comm) {
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
  if (!handle_ || !handle_->owned || handle_->comm == MPI_COMM_NULL) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Comm_free(&handle_->comm);  // nothing to do with a failure in a destructor
}

Communicator Communicator::world() {
  auto handle = new_handle(MPI_COMM_WORLD, false, "world", {});
  for (int r = 0; r < handle->size; ++r) handle->members.push_back(r);
  return Communicator(std::move(handle));
}

int Communicator::rank() const { return live(handle_).rank; }
int Communicator::size() const { return live(handle_).size; }

void Communicator::barrier() {
  Call call(live(handle_), kBarrier, 0, kNoReduction, false);
  const MPI_Comm c = live(handle_).comm;
  run_polled("MPI_Ibarrier", [&](MPI_Request* r) { return MPI_Ibarrier(c, r); }, Idle::YieldThenSleep);
  call.done(0);
}

void Communicator::all_reduce_raw(const double* src, double* dst, long count, Op op) {
  const MPI_Op mpi_op = to_mpi(op);
  const int n = to_count(count, "allreduce");
  Call call(live(handle_), kAllreduce, count, static_cast<std::int64_t>(op), true);
  const MPI_Comm c = live(handle_).comm;
  run_collective("MPI_Allreduce", "MPI_Iallreduce", [&] { return MPI_Allreduce(src, dst, n, MPI_DOUBLE, mpi_op, c); },
                 [&](MPI_Request* r) { return MPI_Iallreduce(src, dst, n, MPI_DOUBLE, mpi_op, c, r); });
  const std::uint64_t bytes = ring_bytes(count, size(), 2);
  bytes_ += bytes;
  call.done(bytes);
}

void Communicator::all_gather_raw(const double* src, long count, double* dst) {
  const int n = to_count(count, "allgather");
  to_count(count * size(), "allgather");
  Call call(live(handle_), kAllgather, count, kNoReduction, true);
  const MPI_Comm c = live(handle_).comm;
  run_collective("MPI_Allgather", "MPI_Iallgather", [&] { return MPI_Allgather(src, n, MPI_DOUBLE, dst, n, MPI_DOUBLE, c); },
                 [&](MPI_Request* r) { return MPI_Iallgather(src, n, MPI_DOUBLE, dst, n, MPI_DOUBLE, c, r); });
  const std::uint64_t bytes = ring_bytes(count * size(), size(), 1);
  bytes_ += bytes;
  call.done(bytes);
}

void Communicator::reduce_scatter_raw(const double* src, double* dst, long block, Op op) {
  const MPI_Op mpi_op = to_mpi(op);
  const int n = to_count(block, "reduce_scatter");
  to_count(block * size(), "reduce_scatter");
  Call call(live(handle_), kReduceScatter, block, static_cast<std::int64_t>(op), true);
  const MPI_Comm c = live(handle_).comm;
  run_collective("MPI_Reduce_scatter_block", "MPI_Ireduce_scatter_block",
                 [&] { return MPI_Reduce_scatter_block(src, dst, n, MPI_DOUBLE, mpi_op, c); },
                 [&](MPI_Request* r) { return MPI_Ireduce_scatter_block(src, dst, n, MPI_DOUBLE, mpi_op, c, r); });
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
  const MPI_Op mpi_op = to_mpi(op);
  const int n = to_count(src.size(), "iallreduce");
  auto state = std::make_unique<Request::State>();
  Call call(live(handle_), kIallreduce, src.size(), static_cast<std::int64_t>(op), true);
  state->start = steady_seconds();
  check_mpi(MPI_Iallreduce(src.data(), dst.data(), n, MPI_DOUBLE, mpi_op, live(handle_).comm, &state->mpi),
            "MPI_Iallreduce");
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
  MPI_Comm comm = MPI_COMM_NULL;
  {
    Call call(live(handle_), kSplit, 0, kNoReduction, false);
    check_mpi(MPI_Comm_split(handle_->comm, color, key, &comm), "MPI_Comm_split");
    call.done(0);
  }
  return Communicator(new_handle(comm, true,
                                 "split(color " + std::to_string(color) + ", key " + std::to_string(key) + ") of " +
                                     handle_->name,
                                 world_ranks_of(comm)));
}

std::uint64_t Communicator::bytes_transferred() const { return bytes_; }

}  // namespace dtrain
