// ring_timing (Part 11, an extension part): times your naive_allreduce, your
// ring_allreduce and MPI's allreduce (the Communicator's) on one buffer size
// after another, and counts the bytes each rank sent. One JSON line per
// (algorithm, size) on rank 0's stdout; `python3 -m kit ring` runs it on
// several rank counts, prints the table and draws the chart.
//   make mpi-demo CASE=ring
//   tools/kitrun -n 4 build/student/ring_timing --max_elements 65536
#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <nlohmann/json.hpp>
#include <string>

#include "cli.h"
#include "ring_calls.h"
#include "program_main.h"

using namespace dtrain;

namespace {

// Each size is timed for about this long (at least one call, at most kMaxCalls).
constexpr double kSecondsPerSize = 0.05;
constexpr int kMaxCalls = 50;

enum class Algorithm { Naive, Ring, Mpi };
const char* name_of(Algorithm a) { return a == Algorithm::Naive ? "naive" : a == Algorithm::Ring ? "ring" : "mpi"; }

Vector call(Algorithm a, const Vector& src, Communicator& comm) {
  if (a == Algorithm::Naive) return student::naive_allreduce(src, comm);
  if (a == Algorithm::Ring) return student::ring_allreduce(src, comm);
  Vector dst(src.size());
  comm.allreduce(src, dst);
  return dst;
}

double largest(Communicator& comm, double mine) {
  Vector v(1), top(1);
  v(0) = mine;
  comm.allreduce(v, top, Op::Max);
  return top(0);
}

// Seconds per call, the slowest rank's, over `calls` calls started together.
double timed(Algorithm a, const Vector& src, Communicator& comm, int calls) {
  CommAccess::rendezvous(comm);
  const double start = CommAccess::wall_time();
  for (int i = 0; i < calls; ++i) call(a, src, comm);
  return largest(comm, (CommAccess::wall_time() - start) / calls);
}

int run(Communicator& world, int argc, char** argv) {
  Flags flags("ring_timing", "Times naive_allreduce, ring_allreduce and MPI's allreduce on growing buffers.");
  int& min_elements = flags.add_int("--min_elements", 8, "the smallest buffer, in doubles");
  int& max_elements = flags.add_int("--max_elements", 1 << 19, "the largest buffer, in doubles (x4 each size)");
  if (const int status = flags.parse(argc, argv, world.rank()); status >= 0) return status;
  if (min_elements < 1 || max_elements < min_elements) {
    if (world.rank() == 0)
      std::fprintf(stderr, "ring_timing: need 1 <= --min_elements <= --max_elements, got %d and %d\n", min_elements,
                   max_elements);
    return 2;
  }
  const int n = world.size(), r = world.rank();
  for (long length = min_elements; length <= max_elements; length *= 4) {
    Vector src(length);  // (L): rank r's values, small integers so every sum is exact
    for (long i = 0; i < length; ++i) src(i) = static_cast<double>((r + 1) * (i % 7 + 1));
    for (Algorithm a : {Algorithm::Naive, Algorithm::Ring, Algorithm::Mpi}) {
      // One call alone: the check that it sums, and the bytes this rank sent.
      const std::uint64_t before = world.bytes_transferred();
      const Vector sum = call(a, src, world);
      const double sent = static_cast<double>(world.bytes_transferred() - before);
      for (long i = 0; i < length; ++i)
        if (sum(i) != static_cast<double>(n * (n + 1) / 2 * (i % 7 + 1)))
          throw std::runtime_error(std::string(name_of(a)) + "_allreduce of " + std::to_string(length) +
                                   " elements: element " + std::to_string(i) + " is " + std::to_string(sum(i)) +
                                   " on rank " + std::to_string(r) + ", not the sum " +
                                   std::to_string(n * (n + 1) / 2 * (i % 7 + 1)));
      const double first = timed(a, src, world, 1);  // how many calls fill the time
      const int calls = std::clamp(static_cast<int>(kSecondsPerSize / std::max(first, 1e-7)), 1, kMaxCalls);
      const double seconds = timed(a, src, world, calls);
      const double rank0_sent = largest(world, r == 0 ? sent : 0.0);
      const double other_sent = largest(world, r == 0 ? 0.0 : sent);
      if (r == 0) {
        const nlohmann::json line = {{"algorithm", name_of(a)}, {"ranks", n},
                                     {"elements", length},     {"bytes", 8.0 * static_cast<double>(length)},
                                     {"seconds", seconds},     {"calls", calls},
                                     {"sent_rank0", rank0_sent}, {"sent_other_max", other_sent}};
        std::printf("%s\n", line.dump().c_str());
        std::fflush(stdout);
      }
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return program_main("ring_timing", argc, argv, run); }
