// comm.cpp: the implementation behind comm.h and comm_runtime.h. This is the
// only translation unit of the kit that names MPI.
#include <mpi.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <exception>
#include <limits>
#include <map>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "comm.h"
#include "comm_runtime.h"
#include "heap_watch.h"

namespace dtrain {

struct Communicator::Handle {
  MPI_Comm comm = MPI_COMM_NULL;
  bool owned = false;  // false for the world view, which MPI frees itself
  int rank = 0;
  int size = 1;
  // The ledger's view of it: a name, an id for this process, and how many
  // collectives this rank has started on it (the sequence number of the last).
  std::string name = "world";
  int id = 0;
  long calls = 0;
  std::vector<int> members;  // by rank in MPI's world, for the trace's args.ranks
};

namespace {

void check_mpi(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(rc, text, &length) != MPI_SUCCESS) length = 0;
  throw std::runtime_error(std::string(call) + " failed: " + std::string(text, static_cast<size_t>(length)));
}

// How a rank waits inside a collective: the one place in the kit's C++ that
// depends on which MPI it runs on (tools/kitrun knows the launchers). Open
// MPI's blocking collectives give up the CPU while they wait (kitrun sets
// mpi_yield_when_idle). MPICH's spin, with no setting to stop them, and 8
// ranks on 2 cores then spend their time slices polling: an epoch takes 10x
// longer. So under MPICH the kit starts the nonblocking form of each
// collective and waits for it itself, yielding between polls.
#if defined(MPICH_VERSION)
constexpr bool kWaitYielding = true;
#else
constexpr bool kWaitYielding = false;
#endif
constexpr long kPollsBeforeYield = 100;  // a peer that is already there answers within these

template <typename Blocking, typename Start>
void run_collective(const char* blocking_name, const char* start_name, Blocking blocking, Start start) {
  if constexpr (kWaitYielding) {
    MPI_Request request = MPI_REQUEST_NULL;
    check_mpi(start(&request), start_name);
    for (long polls = 0;; ++polls) {
      int done = 0;
      check_mpi(MPI_Test(&request, &done, MPI_STATUS_IGNORE), start_name);
      if (done) return;
      if (polls >= kPollsBeforeYield) sched_yield();
    }
  } else {
    (void)start_name;
    (void)start;
    check_mpi(blocking(), blocking_name);
  }
}

MPI_Op to_mpi(Op op) {
  switch (op) {
    case Op::Sum: return MPI_SUM;
    case Op::Min: return MPI_MIN;
    case Op::Max: return MPI_MAX;
  }
  throw std::invalid_argument("unknown reduction Op " + std::to_string(static_cast<int>(op)));
}

int to_count(long count, const char* call) {
  if (count < 0 || count > std::numeric_limits<int>::max())
    throw std::invalid_argument(std::string(call) + ": buffer of " + std::to_string(count) +
                                " elements is beyond MPI's int count");
  return static_cast<int>(count);
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

// Ring volume of one call, in bytes, per rank (see comm.h).
std::uint64_t ring_bytes(long elements, int n, int passes) {
  const std::uint64_t bytes = static_cast<std::uint64_t>(elements) * sizeof(double);
  return static_cast<std::uint64_t>(passes) * (static_cast<std::uint64_t>(n) - 1) * bytes /
         static_cast<std::uint64_t>(n);
}

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

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

// Time inside the counted collectives, for the trainers' reports: how much
// of an epoch is communication (and waiting for the slowest rank).
double g_collective_seconds = 0;

// ---- the ledger (comm.h, comm_runtime.h) ----

enum OpCode : std::int64_t { kAllreduce = 1, kAllgather, kReduceScatter, kSplit, kBarrier };
constexpr const char* kOpNames[] = {"", "allreduce", "allgather", "reduce_scatter", "split", "barrier"};
constexpr const char* kReductionNames[] = {"Sum", "Min", "Max"};
constexpr std::int64_t kNoReduction = -1;

struct Ledger {
  std::mutex mu;  // the watchdog thread reads what the main thread writes
  bool checking = false, tracing = false;
  // The call in flight.
  bool active = false;
  OpCode op = kAllreduce;
  long seq = 0, count = 0;
  std::int64_t reduction = kNoReduction;
  std::string comm;
  std::string function;
  const std::vector<int>* members = nullptr;  // the handle's, alive while the call lasts
  double since = 0;                           // when it was made, if tracing
  // This case's calls, per communicator id: (its name at the last call, calls).
  std::map<int, std::pair<std::string, long>> per_comm;
  std::vector<LedgerEntry> kept;
  std::uint64_t recorded = 0;
  std::vector<ledger::LoggedCall>* log = nullptr;  // the open CallLog's, if any
};

Ledger& the_ledger() {
  static Ledger ledger;
  return ledger;
}

std::atomic<const char*> g_function{nullptr};  // the student function running (StudentScope)
std::vector<ArgShape> g_args;                   // its matrix arguments; main thread only
std::string g_thrown_from;                      // StudentScope: what an exception last left
int g_next_comm_id = 1;

// A stable id of a function name, the same on every rank (FNV-1a).
std::int64_t name_hash(const char* name) {
  std::uint32_t h = 2166136261u;
  for (const char* p = name ? name : ""; *p; ++p) h = (h ^ static_cast<unsigned char>(*p)) * 16777619u;
  return h;
}

std::map<std::int64_t, std::string>& function_names() {  // hash -> name, of the names this rank has seen
  static std::map<std::int64_t, std::string> names;
  return names;
}

std::string plural(long n, const char* word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

// The bookkeeping of one call, apart from the agreement check and MPI, so
// the bench can time exactly this (ledger::seconds_per_record).
void note_start(Communicator::Handle& h, OpCode op, long count, std::int64_t reduction) {
  const char* function = g_function.load();
  Ledger& l = the_ledger();
  std::lock_guard<std::mutex> lock(l.mu);
  l.active = true;
  l.op = op;
  l.seq = ++h.calls;
  l.count = count;
  l.reduction = reduction;
  l.comm = h.name;
  l.function = function ? function : "";
  l.members = &h.members;
  if (l.tracing) l.since = steady_seconds();
  auto& slot = l.per_comm[h.id];
  slot.first = h.name;
  slot.second = h.calls;
  ++l.recorded;
  if (l.log) l.log->push_back({kOpNames[op], count, h.name});
}

// The call in flight as an entry; the caller holds the ledger's lock.
LedgerEntry entry_of(const Ledger& l, double start, double end) {
  LedgerEntry e;
  e.kind = kOpNames[l.op];
  e.seq = l.seq;
  e.count = l.count;
  e.reduction = l.reduction == kNoReduction ? "" : kReductionNames[l.reduction];
  e.comm = l.comm;
  e.function = l.function;
  if (l.members) e.ranks = *l.members;
  e.start = start;
  e.end = end;
  return e;
}

void note_end(double start, double end, std::uint64_t bytes) {
  Ledger& l = the_ledger();
  std::lock_guard<std::mutex> lock(l.mu);
  l.active = false;
  if (l.tracing && end > 0) {  // a call that failed before MPI saw it never ran
    LedgerEntry e = entry_of(l, start, end);
    e.bytes = bytes;
    l.kept.push_back(std::move(e));
  }
}

// The agreement check refused the call: the trace keeps it, marked, spanning
// the check (the one exchange all ranks made for it).
void note_refused(const char* why) {
  Ledger& l = the_ledger();
  std::lock_guard<std::mutex> lock(l.mu);
  l.active = false;
  if (!l.tracing) return;
  LedgerEntry e = entry_of(l, l.since, steady_seconds());
  e.refused = why;
  l.kept.push_back(std::move(e));
}

std::string rank_list(const std::vector<int>& ranks) {
  std::string out = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i) out += (i ? "," : "") + std::to_string(ranks[i]);
  return out;
}

// One call of the ledger: recorded when made, checked against the other
// ranks' calls when checking is on (before MPI sees it), and timed.
class Call {
 public:
  Call(Communicator::Handle& h, OpCode op, long count, std::int64_t reduction, bool timed)
      : timed_(timed) {
    note_start(h, op, count, reduction);
    if (the_ledger().checking) {
      try {
        agree(h, op, count, reduction);
      } catch (const CollectiveMismatch& mismatch) {
        note_refused(mismatch.what());
        throw;
      } catch (...) {
        note_end(0, 0, 0);
        throw;
      }
    }
    start_ = steady_seconds();
  }
  void done(std::uint64_t bytes) {
    const double end = steady_seconds();
    if (timed_) g_collective_seconds += end - start_;
    note_end(start_, end, bytes);
    finished_ = true;
  }
  ~Call() {
    if (!finished_) note_end(start_, steady_seconds(), 0);  // MPI failed: the call is over all the same
  }

 private:
  // Every rank shares (operation, count, reduction, sequence number,
  // function, rank in MPI's world) of this call; any difference in the first
  // three is a mismatch. The message names ranks as the rest of the kit's
  // reports do, by their rank in the world.
  static void agree(Communicator::Handle& h, OpCode op, long count, std::int64_t reduction) {
    constexpr int kFields = 6;
    const char* function = g_function.load();
    int world_rank = 0;
    check_mpi(MPI_Comm_rank(MPI_COMM_WORLD, &world_rank), "MPI_Comm_rank");
    const std::int64_t mine[kFields] = {op, count, reduction, h.calls, name_hash(function), world_rank};
    std::vector<std::int64_t> all(static_cast<size_t>(kFields * h.size));
    run_collective(
        "MPI_Allgather (agreement)", "MPI_Iallgather (agreement)",
        [&] { return MPI_Allgather(mine, kFields, MPI_INT64_T, all.data(), kFields, MPI_INT64_T, h.comm); },
        [&](MPI_Request* r) {
          return MPI_Iallgather(mine, kFields, MPI_INT64_T, all.data(), kFields, MPI_INT64_T, h.comm, r);
        });
    auto row = [&](int r) { return all.data() + kFields * r; };
    bool same = true;
    for (int r = 1; r < h.size && same; ++r) same = std::equal(row(r), row(r) + 3, row(0));
    if (same) return;
    // Group the ranks by what they called; name functions only where they differ.
    std::vector<std::pair<std::vector<std::int64_t>, std::vector<int>>> groups;
    for (int r = 0; r < h.size; ++r) {
      std::vector<std::int64_t> key(row(r), row(r) + 5);
      key[3] = 0;  // the sequence number is the same at a matched check
      auto g = std::find_if(groups.begin(), groups.end(), [&](const auto& x) { return x.first == key; });
      if (g == groups.end()) g = groups.insert(groups.end(), {key, {}});
      g->second.push_back(static_cast<int>(row(r)[5]));
    }
    // Name the members of a split (dp_comm of ranks 1,3); ranks 0..n-1 need no list.
    std::vector<int> members;
    bool first_ranks = true;
    for (int r = 0; r < h.size; ++r) {
      members.push_back(static_cast<int>(row(r)[5]));
      first_ranks = first_ranks && members.back() == r;
    }
    const bool functions_differ = std::any_of(groups.begin(), groups.end(),
                                              [&](const auto& g) { return g.first[4] != groups[0].first[4]; });
    size_t width = 0;
    for (const auto& g : groups) width = std::max(width, rank_list(g.second).size() + 1);
    std::ostringstream msg;
    msg << "collective #" << h.calls << " on " << h.name;
    if (!first_ranks) msg << " (" << rank_list(members) << ")";
    if (function) msg << " in " << function;
    msg << ": ranks disagree";
    for (const auto& [key, ranks] : groups) {
      std::string who = rank_list(ranks) + ":";
      who.resize(width, ' ');
      msg << "\n  " << who << " " << (key[0] >= kAllreduce && key[0] <= kBarrier ? kOpNames[key[0]] : "?");
      if (key[0] != kSplit && key[0] != kBarrier) msg << ", " << plural(static_cast<long>(key[1]), "element");
      if (key[2] != kNoReduction && key[2] >= 0 && key[2] < 3) msg << " (" << kReductionNames[key[2]] << ")";
      if (functions_differ) {
        const auto name = function_names().find(key[4]);
        msg << " in " << (name != function_names().end() ? name->second : "another function");
      }
    }
    throw CollectiveMismatch(msg.str());
  }

  // First, so that what the ledger, the agreement check and MPI allocate
  // for this call is never taken for the caller's (heap_watch.h).
  LibraryAllocations library_;
  bool timed_;
  bool finished_ = false;
  double start_ = 0;
};

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
  auto handle = std::make_unique<Handle>();
  handle->comm = MPI_COMM_WORLD;
  check_mpi(MPI_Comm_rank(MPI_COMM_WORLD, &handle->rank), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(MPI_COMM_WORLD, &handle->size), "MPI_Comm_size");
  for (int r = 0; r < handle->size; ++r) handle->members.push_back(r);
  return Communicator(std::move(handle));
}

static Communicator::Handle& live(const std::unique_ptr<Communicator::Handle>& handle) {
  if (!handle) throw std::logic_error("this Communicator was moved from; use the one it was moved into");
  return *handle;
}

int Communicator::rank() const { return live(handle_).rank; }
int Communicator::size() const { return live(handle_).size; }

void Communicator::barrier() {
  Call call(live(handle_), kBarrier, 0, kNoReduction, false);
  const MPI_Comm c = live(handle_).comm;
  run_collective("MPI_Barrier", "MPI_Ibarrier", [&] { return MPI_Barrier(c); },
                 [&](MPI_Request* r) { return MPI_Ibarrier(c, r); });
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
  auto handle = std::make_unique<Handle>();
  Call call(live(handle_), kSplit, 0, kNoReduction, false);
  check_mpi(MPI_Comm_split(handle_->comm, color, key, &handle->comm), "MPI_Comm_split");
  call.done(0);
  handle->owned = true;
  handle->id = g_next_comm_id++;
  handle->name = "split(color " + std::to_string(color) + ", key " + std::to_string(key) + ") of " + handle_->name;
  check_mpi(MPI_Comm_rank(handle->comm, &handle->rank), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(handle->comm, &handle->size), "MPI_Comm_size");
  handle->members = world_ranks_of(handle->comm);
  return Communicator(std::move(handle));
}

std::uint64_t Communicator::bytes_transferred() const { return bytes_; }

// ---- comm_runtime.h ----

MpiSession::MpiSession(int& argc, char**& argv) {
  check_mpi(MPI_Init(&argc, &argv), "MPI_Init");
  // Return codes instead of aborting, so check_mpi can name the failing call.
  check_mpi(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
}

MpiSession::~MpiSession() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

void MpiSession::abort_job(int exit_code) {
  MPI_Abort(MPI_COMM_WORLD, exit_code);
  std::_Exit(exit_code);  // MPI_Abort does not return; this is for the compiler and for safety
}

int MpiSession::launcher_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"}) {
    const char* value = std::getenv(name);
    if (value == nullptr || *value == '\0') continue;
    char* end = nullptr;
    const long rank = std::strtol(value, &end, 10);
    if (*end == '\0' && rank >= 0 && rank <= std::numeric_limits<int>::max()) return static_cast<int>(rank);
  }
  return -1;
}

Communicator CommAccess::duplicate(Communicator& comm) {
  auto handle = std::make_unique<Communicator::Handle>();
  check_mpi(MPI_Comm_dup(live(comm.handle_).comm, &handle->comm), "MPI_Comm_dup");
  handle->owned = true;
  handle->id = g_next_comm_id++;
  handle->name = live(comm.handle_).name;
  handle->members = live(comm.handle_).members;
  check_mpi(MPI_Comm_rank(handle->comm, &handle->rank), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(handle->comm, &handle->size), "MPI_Comm_size");
  return Communicator(std::move(handle));
}

Communicator CommAccess::duplicate_world() {
  Communicator world = Communicator::world();
  return duplicate(world);
}

void CommAccess::rendezvous(Communicator& comm) {
  MPI_Request request = MPI_REQUEST_NULL;
  check_mpi(MPI_Ibarrier(live(comm.handle_).comm, &request), "MPI_Ibarrier");
  // Poll briefly first (the others are usually there already), then sleep between polls.
  for (long polls = 0;; ++polls) {
    int done = 0;
    check_mpi(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test");
    if (done) return;
    if (polls > 200) {
      timespec pause{0, 500000};  // 0.5 ms
      nanosleep(&pause, nullptr);
    }
  }
}

std::vector<std::string> CommAccess::gather_text(Communicator& comm, const std::string& mine, int root) {
  const MPI_Comm c = live(comm.handle_).comm;
  const int n = comm.size();
  int my_length = to_count(static_cast<long>(mine.size()), "gather_text");
  std::vector<int> lengths(static_cast<size_t>(n), 0);
  check_mpi(MPI_Gather(&my_length, 1, MPI_INT, lengths.data(), 1, MPI_INT, root, c), "MPI_Gather");
  std::vector<int> offsets(static_cast<size_t>(n), 0);
  long total = 0;
  for (int r = 0; r < n; ++r) {
    offsets[static_cast<size_t>(r)] = to_count(total, "gather_text");
    total += lengths[static_cast<size_t>(r)];
  }
  std::string all(static_cast<size_t>(total), '\0');
  check_mpi(MPI_Gatherv(mine.data(), my_length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR,
                        root, c),
            "MPI_Gatherv");
  std::vector<std::string> texts;
  if (comm.rank() != root) return texts;
  for (int r = 0; r < n; ++r)
    texts.push_back(all.substr(static_cast<size_t>(offsets[static_cast<size_t>(r)]),
                               static_cast<size_t>(lengths[static_cast<size_t>(r)])));
  return texts;
}

long CommAccess::max_over_ranks(Communicator& comm, long value) {
  long result = 0;
  const MPI_Comm c = live(comm.handle_).comm;
  run_collective("MPI_Allreduce", "MPI_Iallreduce", [&] { return MPI_Allreduce(&value, &result, 1, MPI_LONG, MPI_MAX, c); },
                 [&](MPI_Request* r) { return MPI_Iallreduce(&value, &result, 1, MPI_LONG, MPI_MAX, c, r); });
  return result;
}

double CommAccess::wall_time() { return steady_seconds(); }

CommAccess::ClockOffset CommAccess::clock_offset(Communicator& comm) {
  constexpr int kRounds = 50, kTag = 7;
  MPI_Comm c = MPI_COMM_NULL;  // private, so no other message can match these
  check_mpi(MPI_Comm_dup(live(comm.handle_).comm, &c), "MPI_Comm_dup");
  const int n = comm.size(), me = comm.rank();
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int length = 0;
  check_mpi(MPI_Get_processor_name(name, &length), "MPI_Get_processor_name");
  std::vector<char> names(static_cast<size_t>(n) * MPI_MAX_PROCESSOR_NAME);
  check_mpi(MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR, c),
            "MPI_Allgather");
  auto host = [&](int r) {
    const char* at = names.data() + static_cast<size_t>(r) * MPI_MAX_PROCESSOR_NAME;
    return std::string(at, strnlen(at, MPI_MAX_PROCESSOR_NAME));
  };
  auto first_of_host = [&](int r) {
    int f = 0;
    while (host(f) != host(r)) ++f;
    return f;
  };
  std::vector<double> measured(2 * static_cast<size_t>(n), 0.0);  // per rank: offset, uncertainty
  for (int r = 1; r < n; ++r) {
    if (host(r) == host(0) || first_of_host(r) != r || (me != 0 && me != r)) continue;
    double best = std::numeric_limits<double>::infinity(), offset = 0;
    for (int i = 0; i < kRounds; ++i) {
      double theirs = 0;
      if (me == 0) {
        const double sent = steady_seconds();
        check_mpi(MPI_Send(&sent, 1, MPI_DOUBLE, r, kTag, c), "MPI_Send");
        check_mpi(MPI_Recv(&theirs, 1, MPI_DOUBLE, r, kTag, c, MPI_STATUS_IGNORE), "MPI_Recv");
        const double back = steady_seconds();
        if (back - sent < best) {
          best = back - sent;
          offset = theirs - (sent + back) / 2;
        }
      } else {
        check_mpi(MPI_Recv(&theirs, 1, MPI_DOUBLE, 0, kTag, c, MPI_STATUS_IGNORE), "MPI_Recv");
        theirs = steady_seconds();
        check_mpi(MPI_Send(&theirs, 1, MPI_DOUBLE, 0, kTag, c), "MPI_Send");
      }
    }
    measured[2 * static_cast<size_t>(r)] = offset;
    measured[2 * static_cast<size_t>(r) + 1] = best / 2;
  }
  check_mpi(MPI_Bcast(measured.data(), 2 * n, MPI_DOUBLE, 0, c), "MPI_Bcast");
  MPI_Comm_free(&c);
  const size_t mine = 2 * static_cast<size_t>(first_of_host(me));
  return {measured[mine], measured[mine + 1], host(me)};
}

double CommAccess::seconds_in_collectives() { return g_collective_seconds; }

void CommAccess::set_name(Communicator& comm, const std::string& name) {
  Communicator::Handle& h = live(comm.handle_);
  std::lock_guard<std::mutex> lock(the_ledger().mu);
  h.name = name;
}

std::string CommAccess::name(const Communicator& comm) { return live(comm.handle_).name; }

// ---- StudentScope and the ledger's functions (comm_runtime.h) ----

StudentScope::StudentScope(const char* function, Communicator* comm, const char* comm_name,
                           std::initializer_list<ArgShape> args)
    : outer_function_(g_function.exchange(function)),
      exceptions_at_start_(std::uncaught_exceptions()),
      comm_(comm_name ? comm : nullptr) {
  const LibraryAllocations bookkeeping;  // the kit's records, not the student function's
  outer_args_ = g_args;
  function_names().emplace(name_hash(function), function);
  g_args.assign(args.begin(), args.end());
  if (comm_) {
    outer_comm_name_ = CommAccess::name(*comm_);
    CommAccess::set_name(*comm_, comm_name);
  }
}

StudentScope::~StudentScope() {
  const LibraryAllocations bookkeeping;
  // By the time a test sees the exception every scope is gone: remember the
  // innermost function it left, with its arguments, for the message.
  if (std::uncaught_exceptions() > exceptions_at_start_ && g_thrown_from.empty()) {
    g_thrown_from = g_function.load();
    if (const std::string args = ledger::arguments_now(); !args.empty()) g_thrown_from += " (called with " + args + ")";
  }
  g_function.store(outer_function_);
  g_args = std::move(outer_args_);
  if (comm_) CommAccess::set_name(*comm_, outer_comm_name_);
}

namespace ledger {

void set_checking(bool on) { the_ledger().checking = on; }
bool checking() { return the_ledger().checking; }

void set_tracing(bool on) {
  std::lock_guard<std::mutex> lock(the_ledger().mu);
  the_ledger().tracing = on;
}

void begin_case() {
  Ledger& l = the_ledger();
  std::lock_guard<std::mutex> lock(l.mu);
  l.per_comm.clear();
  l.kept.clear();
}

std::string state() {
  Ledger& l = the_ledger();
  std::lock_guard<std::mutex> lock(l.mu);
  if (l.active) {
    std::string s = std::string("waiting in ") + kOpNames[l.op] + " #" + std::to_string(l.seq) + " on " + l.comm;
    if (l.op != kSplit && l.op != kBarrier) s += " (" + plural(l.count, "element") + ")";
    return l.function.empty() ? s : s + " in " + l.function;
  }
  if (l.per_comm.empty()) return "without a collective";
  std::string s = "after ";
  size_t i = 0;
  for (const auto& [id, named] : l.per_comm) {
    s += i == 0 ? "" : i + 1 == l.per_comm.size() ? " and " : ", ";
    s += i == 0 ? plural(named.second, "collective") + " on " + named.first
                : std::to_string(named.second) + " on " + named.first;
    ++i;
  }
  return s;
}

std::string function_now() {
  const char* f = g_function.load();
  return f ? f : "";
}

const char* function_now_signal_safe() { return g_function.load(); }

std::string take_thrown_from() { return std::exchange(g_thrown_from, std::string()); }

CallLog::CallLog() {
  Ledger& l = the_ledger();
  std::lock_guard<std::mutex> lock(l.mu);
  if (l.log) throw std::logic_error("CallLog: one at a time");
  l.log = &calls_;
}

CallLog::~CallLog() {
  Ledger& l = the_ledger();
  std::lock_guard<std::mutex> lock(l.mu);
  l.log = nullptr;
}

std::vector<LoggedCall> CallLog::take() {
  Ledger& l = the_ledger();
  std::lock_guard<std::mutex> lock(l.mu);
  return std::exchange(calls_, {});
}

std::string arguments_now() {
  std::string out;
  for (const ArgShape& a : g_args)
    out += (out.empty() ? "" : ", ") + std::string(a.name) + " (" + std::to_string(a.rows) + ", " +
           std::to_string(a.cols) + ")";
  return out;
}

std::vector<LedgerEntry> take_entries() {
  Ledger& l = the_ledger();
  std::lock_guard<std::mutex> lock(l.mu);
  return std::move(l.kept);
}

bool in_flight(LedgerEntry& entry) {
  Ledger& l = the_ledger();
  std::lock_guard<std::mutex> lock(l.mu);
  if (!l.active || !l.tracing) return false;
  entry = entry_of(l, l.since, steady_seconds());
  entry.pending = true;
  return true;
}

std::uint64_t calls_recorded() {
  Ledger& l = the_ledger();
  std::lock_guard<std::mutex> lock(l.mu);
  return l.recorded;
}

double seconds_per_record(long samples) {
  Communicator::Handle probe;
  probe.name = "probe";
  probe.id = -1;
  const auto start = std::chrono::steady_clock::now();
  for (long i = 0; i < samples; ++i) {
    note_start(probe, kAllreduce, 1024, 0);
    note_end(0, 0, 0);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  Ledger& l = the_ledger();
  std::lock_guard<std::mutex> lock(l.mu);
  l.per_comm.erase(-1);
  l.recorded -= static_cast<std::uint64_t>(samples);
  return seconds / static_cast<double>(samples);
}

Phase::Phase(const char* name) : name_(name), start_(the_ledger().tracing ? steady_seconds() : 0) {}

Phase::~Phase() {
  Ledger& l = the_ledger();
  if (!l.tracing) return;
  LedgerEntry e;
  e.kind = name_;
  e.collective = false;
  e.function = function_now();
  e.start = start_;
  e.end = steady_seconds();
  std::lock_guard<std::mutex> lock(l.mu);
  l.kept.push_back(std::move(e));
}

}  // namespace ledger

}  // namespace dtrain
