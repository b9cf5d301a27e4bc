// comm.cpp: the implementation behind comm.h and comm_runtime.h. This is the
// only translation unit of the kit that names MPI.
#include <mpi.h>

#include <cstdlib>
#include <ctime>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>

#include "comm.h"
#include "comm_runtime.h"

namespace dtrain {

struct Communicator::Handle {
  MPI_Comm comm = MPI_COMM_NULL;
  bool owned = false;  // false for the world view, which MPI frees itself
  int rank = 0;
  int size = 1;
};

namespace {

void check_mpi(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(rc, text, &length) != MPI_SUCCESS) length = 0;
  throw std::runtime_error(std::string(call) + " failed: " + std::string(text, static_cast<size_t>(length)));
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
  msg << call << ": " << what << " must have " << expected << " elements, got " << got;
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

// Time inside the counted collectives, for the trainers' reports: how much
// of an epoch is communication (and waiting for the slowest rank).
double g_collective_seconds = 0;

struct CollectiveClock {
  const double start = MPI_Wtime();
  ~CollectiveClock() { g_collective_seconds += MPI_Wtime() - start; }
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
  return Communicator(std::move(handle));
}

static const Communicator::Handle& live(const std::unique_ptr<Communicator::Handle>& handle) {
  if (!handle) throw std::logic_error("this Communicator was moved from; use the one it was moved into");
  return *handle;
}

int Communicator::rank() const { return live(handle_).rank; }
int Communicator::size() const { return live(handle_).size; }

void Communicator::barrier() { check_mpi(MPI_Barrier(live(handle_).comm), "MPI_Barrier"); }

void Communicator::all_reduce_raw(const double* src, double* dst, long count, Op op) {
  const CollectiveClock clock;
  const MPI_Op mpi_op = to_mpi(op);
  const int n = to_count(count, "allreduce");
  check_mpi(MPI_Allreduce(src, dst, n, MPI_DOUBLE, mpi_op, live(handle_).comm), "MPI_Allreduce");
  bytes_ += ring_bytes(count, size(), 2);
}

void Communicator::all_gather_raw(const double* src, long count, double* dst) {
  const CollectiveClock clock;
  const int n = to_count(count, "allgather");
  to_count(count * size(), "allgather");
  check_mpi(MPI_Allgather(src, n, MPI_DOUBLE, dst, n, MPI_DOUBLE, live(handle_).comm), "MPI_Allgather");
  bytes_ += ring_bytes(count * size(), size(), 1);
}

void Communicator::reduce_scatter_raw(const double* src, double* dst, long block, Op op) {
  const CollectiveClock clock;
  const MPI_Op mpi_op = to_mpi(op);
  const int n = to_count(block, "reduce_scatter");
  to_count(block * size(), "reduce_scatter");
  check_mpi(MPI_Reduce_scatter_block(src, dst, n, MPI_DOUBLE, mpi_op, live(handle_).comm),
            "MPI_Reduce_scatter_block");
  bytes_ += ring_bytes(block * size(), size(), 1);
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
  check_mpi(MPI_Comm_split(live(handle_).comm, color, key, &handle->comm), "MPI_Comm_split");
  handle->owned = true;
  check_mpi(MPI_Comm_rank(handle->comm, &handle->rank), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(handle->comm, &handle->size), "MPI_Comm_size");
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

Communicator CommAccess::duplicate(Communicator& comm) {
  auto handle = std::make_unique<Communicator::Handle>();
  check_mpi(MPI_Comm_dup(live(comm.handle_).comm, &handle->comm), "MPI_Comm_dup");
  handle->owned = true;
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
  check_mpi(MPI_Allreduce(&value, &result, 1, MPI_LONG, MPI_MAX, live(comm.handle_).comm), "MPI_Allreduce");
  return result;
}

double CommAccess::wall_time() { return MPI_Wtime(); }

double CommAccess::seconds_in_collectives() { return g_collective_seconds; }

}  // namespace dtrain
