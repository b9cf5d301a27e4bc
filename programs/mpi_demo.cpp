// mpi_demo: Part 0's warm-up. Shows what each rank holds before and after
// one collective of the kit's Communicator.
//   make mpi-demo CASE=allreduce        (also allgather, reduce_scatter, split)
//   tools/kitrun -n 8 build/mpi_demo --case split
// Rank 0 collects every rank's lines and prints them in rank order.
#include <cstdio>
#include <sstream>
#include <string>

#include "cli.h"
#include "comm_runtime.h"

using namespace dtrain;

namespace {

std::string show(const Matrix& m) {
  std::ostringstream out;
  out << "[";
  for (Eigen::Index i = 0; i < m.size(); ++i) out << (i ? " " : "") << m.data()[i];
  return out.str() + "]";
}

// Rank r's values: small numbers that differ per rank and per position, so
// a minimum, a sum and an order are all visible.
Matrix values_of(int r, int n) {
  Matrix m(1, n);
  for (int i = 0; i < n; ++i) m(0, i) = (3 + r * (i + 1) + 2 * i) % 9 + 1;
  return m;
}

void print_in_rank_order(Communicator& report, const std::string& title, const std::string& mine) {
  const auto lines = CommAccess::gather_text(report, mine, 0);
  if (report.rank() != 0) return;
  std::printf("%s\n", title.c_str());
  for (const auto& line : lines) std::printf("%s", line.c_str());
  std::printf("\n");
}

std::string tag(int rank) { return "  rank " + std::to_string(rank) + ": "; }

}  // namespace

int main(int argc, char** argv) {
  MpiSession mpi(argc, argv);
  Communicator world = Communicator::world();
  Communicator report = CommAccess::duplicate_world();  // keeps the printing out of the byte counts
  const int r = world.rank(), n = world.size();

  Flags flags("mpi_demo", "Prints what every rank holds before and after one collective.");
  std::string& which = flags.add_string("--case", "allreduce", "allreduce | allgather | reduce_scatter | split");
  if (const int status = flags.parse(argc, argv, r); status >= 0) return status;

  if (which == "allreduce") {
    const Matrix mine = values_of(r, 4);
    Matrix result(1, 4);
    world.allreduce(mine, result, Op::Min);
    print_in_rank_order(report, "before: each rank's 4 values", tag(r) + show(mine) + "\n");
    print_in_rank_order(report, "after allreduce(op=Min): every rank holds the element-wise minimum",
                        tag(r) + show(result) + "   bytes sent: " + std::to_string(world.bytes_transferred()) + "\n");
  } else if (which == "allgather") {
    const Matrix mine = values_of(r, 2);
    Matrix all(n, 2);
    world.allgather(mine, all);
    print_in_rank_order(report, "before: each rank's 2 values", tag(r) + show(mine) + "\n");
    print_in_rank_order(report, "after allgather: every rank holds all blocks, in rank order",
                        tag(r) + show(all) + "   bytes sent: " + std::to_string(world.bytes_transferred()) + "\n");
  } else if (which == "reduce_scatter") {
    const Matrix mine = values_of(r, n);
    Matrix block(1, 1);
    world.reduce_scatter(mine, block, Op::Sum);
    print_in_rank_order(report, "before: each rank's " + std::to_string(n) + " values (one block per rank)",
                        tag(r) + show(mine) + "\n");
    print_in_rank_order(report, "after reduce_scatter(op=Sum): rank i holds the sum of everyone's block i",
                        tag(r) + show(block) + "   bytes sent: " + std::to_string(world.bytes_transferred()) + "\n");
  } else if (which == "split") {
    const int color = r % 2;
    Communicator group = world.split(color, r);
    const Matrix mine = values_of(r, 3);
    Matrix sum(1, 3);
    group.allreduce(mine, sum, Op::Sum);
    print_in_rank_order(report, "split(color = rank % 2, key = rank): even and odd ranks form two groups",
                        tag(r) + "color " + std::to_string(color) + " -> rank " + std::to_string(group.rank()) +
                            " of " + std::to_string(group.size()) + " in its group, holds " + show(mine) + "\n");
    print_in_rank_order(report, "after allreduce(op=Sum) inside each group: each group has its own sum",
                        tag(r) + show(sum) + "\n");
  } else {
    if (r == 0) std::fprintf(stderr, "mpi_demo: unknown --case '%s'\n%s\n", which.c_str(), flags.usage().c_str());
    return 2;
  }
  return 0;
}
