// comm.h: the kit's only door to MPI.
//
// A Communicator owns one MPI communicator (RAII; movable, not copyable) and
// offers the four collectives of the assignment on Matrix and Vector buffers.
// Buffers are taken flat, in storage order; a Matrix is row-major, so the
// buffer of a (B, D) matrix is its B rows one after another.
//
// Preconditions are checked before any MPI call: the caller allocates the
// destination, and a size that does not fit throws std::invalid_argument
// naming both sizes. The source and the destination must be distinct objects.
// A failing MPI call throws std::runtime_error with MPI's own error text.
//
// Communication volume. bytes_transferred() adds, per call, the bytes one
// rank sends under the ring algorithm, with n = size() and B the byte size of
// the buffer named:
//
//   allreduce       2 (n-1)/n * B(src)    reduce-scatter, then all-gather
//   allgather         (n-1)/n * B(dst)    n-1 steps of one block each
//   reduce_scatter    (n-1)/n * B(src)    n-1 steps of one block each
//
// The kit computes it in one place (kit/facts.py); the trainers' reports,
// the explorer and the tests all read it through bytes_transferred().
//
// The ledger. Every rank records each call it makes (its position in this
// communicator's sequence, the operation, the element count, the reduction,
// the communicator's name and the student function running), so a hang can
// be explained (comm_runtime.h). In the tests, and in the trainers with
// --check-collectives, the ranks first agree on (operation, count, reduction)
// with one small extra collective; if they disagree, every rank throws
// CollectiveMismatch naming each rank's call, and MPI never sees the
// mismatched call. That check is neither counted nor timed.
//
// Non-blocking calls (iallreduce) return a Request. The ledger records when
// each one starts (where the agreement check applies, as for any
// collective) and when the kit sees it complete (wait, or a test that
// returns true). In between, Open MPI and MPICH move its data only inside
// their calls (any call of a communicator, test(), wait()), not while the
// rank computes.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

#include "tensor.h"

namespace dtrain {

enum class Op { Sum, Min, Max };

// The ranks of a communicator called different collectives at the same point
// of its sequence (or the same one with different counts or reductions).
class CollectiveMismatch : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A non-blocking call in flight. Move-only; a default one holds no call
// (wait() returns at once, test() is true). Its source and destination must
// stay alive and untouched until it completes. Destroying (or assigning
// over) a request that was never waited, or tested to completion, fails the
// case, naming the call that started it; the kit then waits for it, so
// that MPI never writes into freed memory.
class Request {
 public:
  Request() noexcept;
  Request(Request&& other) noexcept;
  Request& operator=(Request&& other) noexcept;
  Request(const Request&) = delete;
  Request& operator=(const Request&) = delete;
  ~Request();

  void wait();  // returns once the destination holds the result
  bool test();  // true once complete (then as wait()); never blocks

  struct State;  // opaque: the MPI request and what the ledger knows of it (ledger.h)

 private:
  explicit Request(std::unique_ptr<State> state) noexcept;
  friend class Communicator;
  std::unique_ptr<State> state_;
};

class Communicator {
 public:
  // A view of all ranks of the job (MPI's world). Cheap, and not collective.
  static Communicator world();

  Communicator(Communicator&& other) noexcept;
  Communicator& operator=(Communicator&& other) noexcept;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;
  ~Communicator();

  int rank() const;
  int size() const;
  void barrier();

  // Matrix buffers: any shapes whose element counts fit.
  void allreduce(const Matrix& src, Matrix& dst, Op op = Op::Sum);       // dst.size() == src.size()
  void allgather(const Matrix& src, Matrix& dst);                        // dst.size() == src.size() * size()
  void reduce_scatter(const Matrix& src, Matrix& dst, Op op = Op::Sum);  // src.size() == dst.size() * size()

  // Vector buffers (flat shards), with the same rules.
  void allreduce(const Vector& src, Vector& dst, Op op = Op::Sum);
  void allgather(const Vector& src, Vector& dst);
  void reduce_scatter(const Vector& src, Vector& dst, Op op = Op::Sum);

  // The allreduce, started and left running: dst holds the result once the
  // request completes. A collective like the others (every rank starts it
  // at the same point of the communicator's sequence, with the same count
  // and reduction), counted as allreduce is.
  Request iallreduce(const Vector& src, Vector& dst, Op op = Op::Sum);  // dst.size() == src.size()
  // A temporary src would be gone before the allreduce reads it: refused when compiling.
  Request iallreduce(const Vector&& src, Vector& dst, Op op = Op::Sum) = delete;

  // Point-to-point, for the extension parts. Blocking and synchronous: a send
  // returns only once the matching recv has begun, so a cycle of sends
  // deadlocks on every MPI and at every message size (the watchdog's
  // roll-call then names the cycle). A message is matched by (source, tag),
  // 0 <= tag <= 10000; the receiver allocates dst, whose size must equal the
  // sender's src size (a mismatch fails both ranks, naming both sizes and the
  // tag, before any element moves). A rank cannot send or recv to itself.
  void send(const Matrix& src, int dest, int tag);
  void recv(Matrix& dst, int source, int tag);
  // Both at once, as MPI_Sendrecv: the step where a rank must send and receive together.
  void sendrecv(const Matrix& src, int dest, int send_tag, Matrix& dst, int source, int recv_tag);
  void send(const Vector& src, int dest, int tag);
  void recv(Vector& dst, int source, int tag);
  void sendrecv(const Vector& src, int dest, int send_tag, Vector& dst, int source, int recv_tag);

  // Collective over this communicator: ranks that pass the same color form a
  // new communicator, ordered by key (ties broken by rank here), as MPI_Comm_split.
  Communicator split(int color, int key);

  // Bytes this rank moved through this communicator so far (the formula
  // above for the collectives; a send or sendrecv adds the bytes it sends).
  std::uint64_t bytes_transferred() const;

  struct Handle;  // opaque: wraps the MPI communicator, defined in comm_internal.h

 private:
  explicit Communicator(std::unique_ptr<Handle> handle);
  friend struct CommAccess;  // the framework's runtime helpers (comm_runtime.h)

  void all_reduce_raw(const double* src, double* dst, long count, Op op);
  void all_gather_raw(const double* src, long count, double* dst);
  void reduce_scatter_raw(const double* src, double* dst, long block, Op op);
  void send_raw(const double* src, long count, int dest, int tag);
  void recv_raw(double* dst, long count, int source, int tag);
  void sendrecv_raw(const double* src, long send_count, int dest, int send_tag, double* dst, long recv_count,
                    int source, int recv_tag);

  std::unique_ptr<Handle> handle_;
  std::uint64_t bytes_ = 0;
};

}  // namespace dtrain
