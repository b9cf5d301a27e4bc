// test_driven_calls.cpp: the driven mode end to end (framework/calls/driven.h):
// a harness process with no student code calls the reference's functions in
// the rank's student process, on four ranks, and checks what comes back;
// then the side's own checks of that process: a collective its ranks
// disagree on, a request of the harness's kind, a call that floods the side
// with requests, a crash, and upcalls. Inputs encode the rank,
// so every expected value is closed-form; a failure on any rank fails the
// run on rank 0, naming the rank.
//   KIT_STUDENT_PROGRAM=build/driven_test_server tools/kitrun -n 4 build/driven_calls_demo
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <thread>
#include <stdexcept>
#include <string>
#include <vector>

#include "comm.h"
#include "comm_runtime.h"
#include "data_parallel_preprocess.h"
#include "driven.h"
#include "func_impl.h"
#include "zero_calls.h"
#if __has_include("ring_collectives.h")
#include "ring_collectives.h"
#endif
#if __has_include("ddp.h")
#include "ddp_driven.h"
#endif

using dtrain::Communicator;
using dtrain::Labels;
using dtrain::Matrix;
using dtrain::calls::remote;

namespace {

std::vector<std::string> g_failures;
std::vector<double> g_scaled_by;  // the factors of each kit.scaled upcall, in order

// The harness's function the test server's upcalls_twice calls back.
Matrix scaled(const Matrix& x, double factor) {
  g_scaled_by.push_back(factor);
  return x * factor;
}
KIT_UPCALLED("kit.scaled", &scaled);

void expect(bool ok, const std::string& what) {
  if (!ok) g_failures.push_back(what);
}

bool near(const Matrix& a, const Matrix& b) {
  return a.rows() == b.rows() && a.cols() == b.cols() && (a - b).cwiseAbs().maxCoeff() < 1e-12;
}

// The job's launcher on this host (the side's parent): one name for every rank's files.
int launcher_pid() {
  std::ifstream stat("/proc/" + std::to_string(getppid()) + "/stat");
  std::string pid, name, state;
  int parent = 0;
  stat >> pid >> name >> state >> parent;  // a side's name has no spaces
  return parent;
}

Matrix filled(int rows, int cols, double start) {
  Matrix m(rows, cols);
  for (int i = 0; i < m.size(); ++i) m.data()[i] = start + i;
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  dtrain::MpiSession session(argc, argv);
  Communicator world = Communicator::world();
  const int rank = world.rank(), size = world.size();

  // split_data: 8 rows over dp 2 (mp 2): rank r takes rows 4 * (r / 2) on.
  Matrix x = filled(8, 3, 0);
  Labels y(8);
  for (int i = 0; i < 8; ++i) y[i] = i;
  const auto [xs, ys] = remote<decltype(dtrain::split_data)>("split_data", x, y, 2, 2, rank);
  const int first = 4 * (rank / 2);
  expect(near(xs, x.middleRows(first, 4)) && ys.size() == 4 && ys[0] == first, "split_data's rows");
  try {
    remote<decltype(dtrain::split_data)>("split_data", x, y, 0, 2, rank);
    expect(false, "split_data with mp_size 0 did not throw");
  } catch (const std::invalid_argument&) {
  }

  // collect_weight_grad on the world: rank r holds (r + 1) * base; the mean is 2.5 * base.
  const Matrix base_w = filled(3, 5, 1), base_b = filled(1, 5, 1);
  const auto [w, b] = remote<decltype(dtrain::collect_weight_grad)>("collect_weight_grad", Matrix((rank + 1) * base_w),
                                                                    Matrix((rank + 1) * base_b), world);
  expect(near(w, 2.5 * base_w) && near(b, 2.5 * base_b), "collect_weight_grad's mean");

  // get_info makes communicators in the student's process; the harness
  // passes them back to a later call by the side's number.
  dtrain::ParallelInfo info =
      remote<decltype(dtrain::get_info)>("get_info", world, rank, 2, 2, true, false, 4, 6);
  expect(info.mp_idx == rank % 2 && info.dp_idx == rank / 2, "get_info's indices");
  expect(info.mp_comm.size() == 2 && info.mp_comm.rank() == rank % 2, "get_info's mp_comm, borrowed");
  const Matrix gathered = remote<decltype(dtrain::naive_collect_forward_input)>(
      "naive_collect_forward_input", filled(2, 3, 10 * rank), info.mp_comm, 2);
  // The mp group {2 dp, 2 dp + 1}: its two column blocks, side by side.
  Matrix both(2, 6);
  both << filled(2, 3, 10 * (rank / 2 * 2)), filled(2, 3, 10 * (rank / 2 * 2 + 1));
  expect(near(gathered, both), "naive_collect_forward_input's column blocks, over a communicator get_info made");

  // Parts 8-9's objects live in the student's process; the harness holds
  // their numbers. The seed's layer on every rank: each shard of the
  // gradient is the reduce-scatter sum, 4x one rank's.
  {
    using namespace dtrain::calls::zero;
    Matrix w(2, 4), b(1, 4), x2(2, 2), grad_out(2, 4), out(2, 4), grad_x(2, 2);
    w << 11, 6, 2, 3, 4, 5, 7, 8;
    b << 1, 0, 2, 1;
    x2 << 1, 2, 3, 4;
    grad_out << 1, 2, 3, 4, 5, 6, 7, 8;
    out << 20, 16, 18, 20, 50, 38, 36, 42;
    grad_x << 41, 67, 129, 163;
    using Partition = std::pair<dtrain::Vector, int>(const Matrix&, int, int);
    const auto w_part = remote<Partition>("partition_flat_tensor", w, rank, size);
    const auto b_part = remote<Partition>("partition_flat_tensor", b, rank, size);
    RemoteLayer layer = remote_layer_from_partition(world, 2, 4, size, w_part, b_part);
    const Answer forward = layer.forward(x2);
    expect(near(forward.result, out) && forward.kept.watched && forward.kept.kept.bytes == 0,
           "the ZeRO layer's forward, and the memory rule's watch around it");
    expect(near(layer.x(), x2) && layer.w_shard_size() == 2, "the ZeRO layer's fields after forward");
    const Answer backward = layer.backward(grad_out);
    expect(near(backward.result, grad_x), "the ZeRO layer's backward");
    const double w_shards[4][2] = {{64, 80}, {96, 112}, {88, 112}, {136, 160}};
    const dtrain::Vector gw = layer.grad_w_shard(), gb = layer.grad_b_shard();
    expect(near(backward.grad_w_shard, gw) && near(backward.grad_b_shard, gb), "backward answers with its shards");
    expect(gw.size() == 2 && gw[0] == w_shards[rank][0] && gw[1] == w_shards[rank][1] && gb.size() == 1 &&
               gb[0] == 24.0 + 8 * rank,
           "the ZeRO layer's gradient shards");
    RemoteAdam adam({&layer});
    adam.step();
    const std::vector<std::string> keys = adam.state_keys();
    expect(adam.step_idx() == 1 && keys == std::vector<std::string>{"0.b", "0.w"}, "Adam's state after a step");
    const dtrain::Vector m = adam.moment("0.w", "m");
    expect(m.size() == 2 && std::abs(m[0] - 0.1 * gw[0]) < 1e-12, "Adam's first moment of 0.w");
  }

  // Rank 0 all-gathers where the others all-reduce: the side refuses the
  // collective on every rank, and the harness names it from the side's findings.
  try {
    remote<Matrix(const Matrix&, Communicator&)>("disagree", filled(1, 2, rank), world);
    expect(false, "a disagreeing collective went through");
  } catch (const dtrain::CollectiveMismatch& e) {
    const std::string m = e.what();
    // The world's tenth collective of the student's process: collect_weight_grad's two allreduces,
    // get_info's two splits, and the ZeRO layer's five (the reference's) came first.
    expect(m.find("collective #10 on world in disagree: ranks disagree") != std::string::npos &&
               m.find("rank 0:      allgather, 2 elements") != std::string::npos &&
               m.find("ranks 1,2,3: allreduce, 2 elements (Sum)") != std::string::npos,
           "the disagreement's message: " + m);
  }
  // A case's name from the student's process: refused (and, in a job, its
  // case's account holds an entry no reference's does).
  expect(remote<int(int)>("names_a_case", 0) == 1, "a case named by the student's process was taken");

  // While rank 0 comes late to an allreduce, the others' harnesses read
  // what their student processes do from the side's page alone.
  // Rank 0's comes once each other rank has seen it (the test server's late_allreduce).
  const int launcher = launcher_pid();
  const std::string flag = "/tmp/kit-driven-" + std::to_string(launcher) + "-" + std::to_string(rank);
  std::string seen;
  std::atomic<bool> returned{false};
  std::thread watcher([&] {
    while (!returned && seen.rfind("waiting in ", 0) != 0) {
      seen = dtrain::calls::student_state();
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (!returned) std::ofstream{flag};
  });
  remote<Matrix(const Matrix&, Communicator&, int)>("late_allreduce", filled(1, 1, rank), world, launcher);
  returned = true;
  watcher.join();
  std::remove(flag.c_str());
  if (rank != 0)
    expect(seen == "waiting in allreduce #11 on world (1 element) in late_allreduce", "the page's state: " + seen);
  const std::string after = dtrain::calls::student_state();
  expect(after == "after 11 collectives on world and 1 on mp_comm", "the page's counts: " + after);

  // What the student's process serves: the base parts' functions, and
  // each extension part's that this copy builds (registered by its own file).
  const std::vector<std::string> served =
      remote<std::vector<std::string>()>(dtrain::calls::kServedNames);
  auto serves = [&](const char* name) { return std::find(served.begin(), served.end(), name) != served.end(); };
  expect(serves("split_data") && serves("ZeroDPAdam::step") && serves("disagree"), "the served functions' names");
#if __has_include("ring_collectives.h")
  // Part 11, where this copy holds it: its own file registers its functions (ring_served.cpp).
  if (serves("ring_allreduce")) {
    const dtrain::Vector v = dtrain::Vector::Constant(10, rank + 1.0);
    const dtrain::Vector summed = remote<decltype(dtrain::ring_allreduce)>("ring_allreduce", v, world);
    expect(summed.size() == 10 && summed[0] == size * (size + 1) / 2.0, "ring_allreduce's sum");
  }
#endif

#if __has_include("ddp.h")
  // Part 13, where this copy holds it: the buckets live in the student's
  // process, and each grad_ready is a call of its own.
  if (serves("GradientBuckets::grad_ready")) {
    const std::vector<long> elems = {3, 5, 2};
    expect(!dtrain::calls::ddp::remote_plan_buckets(elems, 6).empty(), "plan_buckets's plan");
    dtrain::calls::ddp::RemoteBuckets buckets(elems, 6, world);
    std::vector<dtrain::Vector> grads;
    for (long n : elems) grads.push_back(dtrain::Vector::Constant(n, rank + 1.0));
    for (int p = 2; p >= 0; --p) buckets.grad_ready(p, grads[static_cast<std::size_t>(p)]);
    std::vector<dtrain::Vector*> places;
    for (auto& g : grads) places.push_back(&g);
    buckets.finish(places);
    bool averaged = true;
    for (const auto& g : grads) averaged = averaged && (g.array() == (size + 1) / 2.0).all();
    expect(averaged, "GradientBuckets's averaged gradients");
  }
#endif

  // The student's code calls back into the harness (an upcall): the harness
  // runs its function, and sees each call, in order, with its arguments.
  {
    const Matrix x = filled(1, 3, rank);
    const Matrix got = remote<Matrix(const Matrix&, Communicator&)>("upcalls_twice", x, world);
    Matrix sum = Matrix::Zero(1, 3);
    for (int r = 0; r < size; ++r) sum += 2.0 * filled(1, 3, r);
    expect(near(got, 2.5 * sum), "upcalls_twice's value");
    expect(g_scaled_by == std::vector<double>{2.0, 3.0, 1.5}, "the upcalls the harness ran, in order");
  }

  // A communicator the harness made and lent to the student's process is
  // the harness's: that process can't free it, and it still works after.
  {
    Communicator lent = dtrain::CommAccess::duplicate(world);
    expect(remote<int(Communicator&)>("frees", lent) == 1, "the student's process freed the harness's communicator");
    Matrix sum(1, 1);
    lent.allreduce(filled(1, 1, rank), sum);
    expect(sum(0, 0) == size * (size - 1) / 2.0, "an allreduce on the lent communicator after the refused free");
  }

  // A call that makes more requests than the side logs in one fails with a
  // count, and the side's memory stays bounded; one at the cap is logged whole.
  {
    dtrain::ledger::CallLog log;
    expect(remote<int(Communicator&, int)>("floods", world, dtrain::link::kMostLoggedRequests) ==
               dtrain::link::kMostLoggedRequests &&
               log.take().size() == static_cast<std::size_t>(dtrain::link::kMostLoggedRequests),
           "a call of as many requests as the side logs, logged whole");
    std::string why;
    try {
      remote<int(Communicator&, int)>("floods", world, dtrain::link::kMostLoggedRequests + 3);
    } catch (const std::runtime_error& e) {
      why = e.what();
    }
    expect(why.rfind("floods made 3 more requests of the communicator than the " +
                         std::to_string(dtrain::link::kMostLoggedRequests) + " the kit logs in one call", 0) == 0,
           "the flood's message: " + why);
  }

  // The last rank's student process crashes: its harness learns how from the side.
  try {
    const int got = remote<int(int)>("crash_on_last_rank", size);
    expect(rank != size - 1 && got == 0, "crash_on_last_rank returned on the last rank");
  } catch (const dtrain::calls::ProcessGone& e) {
    expect(rank == size - 1 && std::string(e.what()) ==
                                   "the student's process crashed with SIGSEGV (invalid memory access) in "
                                   "crash_on_last_rank",
           std::string("the crash's message: ") + e.what());
  }

  // What every rank found, on rank 0.
  long failed = static_cast<long>(g_failures.size());
  for (const auto& f : g_failures) std::fprintf(stderr, "rank %d: %s\n", rank, f.c_str());
  Matrix count(1, 1), total(1, 1);
  count(0, 0) = static_cast<double>(failed);
  world.allreduce(count, total);
  if (rank == 0) std::printf("driven calls on %d ranks: %s\n", size, total(0, 0) == 0 ? "all as expected" : "FAILED");
  return total(0, 0) == 0 ? 0 : 1;
}
