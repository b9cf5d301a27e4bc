// ddp_train (Part 13, an extension part): trains the MLP with K hidden
// layers (784, then K of --width, then 10) with data parallelism on every
// rank, each rank a share of every batch. Your GradientBuckets averages the
// gradients: backward hands each parameter's gradient to grad_ready the
// moment it is final, last parameter first, and your finish() waits for
// the buckets' allreduces.
//   make train-ddp DP=4 BUCKET_KB=256          (OVERLAP=0: every gradient handed over after backward)
//   tools/kitrun -n 2 build/student/ddp_train --bucket_kb 64 --hidden_layers 3
// After training it measures 20 steps (--measure_steps) three ways, on the ledger's spans:
// without buckets (a blocking allreduce per parameter, as backward hands it
// over), with your buckets handed their gradients after backward, and with
// your buckets filled as backward goes: the step time, the allreduces a step
// makes, and the share of the allreduces' time that overlapped backward's
// computing (each request's span, from its start to the moment the kit saw
// it complete, against backward's spans of computing).
#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli.h"
#include "ddp_calls.h"
#include "ddp_model.h"
#include "program_main.h"
#include "run_report.h"

using namespace dtrain;

namespace {

constexpr std::uint64_t kSeed = 15442;

// How a step averages its gradients.
enum class Way { PerParameter, BucketsAfter, BucketsAtOnce };
const char* name_of(Way w) {
  return w == Way::PerParameter ? "no buckets: a blocking allreduce per parameter"
         : w == Way::BucketsAfter ? "your buckets, handed over after backward"
                                  : "your buckets, each started as it fills";
}
const char* key_of(Way w) {
  return w == Way::PerParameter ? "per_parameter" : w == Way::BucketsAfter ? "buckets_after" : "buckets_at_once";
}

// One training step's communication: the buckets (the student's), or a
// blocking allreduce per parameter (the plain way, Part 7's).
struct Averaging {
  Communicator& world;
  DdpModel& model;
  student::Buckets& buckets;
  bool progress;  // the kit tests the requests in flight between layers

  void step(Way way) {
    if (way == Way::PerParameter) {
      std::vector<Vector> averaged(model.grads().size());  // (P)
      const double share = 1.0 / world.size();
      model.backward(
          [&](int p, const Vector& grad) {
            Vector sum(grad.size());
            world.allreduce(grad, sum);
            averaged[static_cast<size_t>(p)] = sum * share;
          },
          {true, progress});
      for (size_t p = 0; p < averaged.size(); ++p) model.grads()[p] = std::move(averaged[p]);
      return;
    }
    model.backward([&](int p, const Vector& grad) { student::grad_ready(*buckets, world, p, grad); },
                   {way == Way::BucketsAtOnce, progress});
    const ledger::Phase phase("finish");
    student::finish(*buckets, world, model.grad_pointers());
  }
};

// A step's figures from one rank's ledger: its time, its allreduces, and
// how much of their time lay inside backward's spans of computing. Each is
// the median over the steps (a host busy with other work slows some steps,
// not the step), the overlap the share of all the steps' allreduce time.
struct Figures {
  double step = 0, comm = 0, finish = 0;  // seconds a step
  double share = 0;                       // of the allreduces' time, inside backward's computing
  double allreduces = 0;                  // a step
  std::vector<double> bucket_start, bucket_end, bucket_share;  // per bucket: from the step's start, seconds; share
};

double inside(double a0, double a1, double b0, double b1) { return std::max(0.0, std::min(a1, b1) - std::max(a0, b0)); }

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

Figures figures_of(const std::vector<LedgerEntry>& entries) {
  std::vector<const LedgerEntry*> computing, comm, finishing, step_spans;
  for (const LedgerEntry& e : entries) {
    if (e.phase == "backward") computing.push_back(&e);
    if (e.phase == "finish") finishing.push_back(&e);
    if (e.phase == "step") step_spans.push_back(&e);
    if (e.op == facts::kAllreduce || (e.op == facts::kIallreduce && e.request != 0)) comm.push_back(&e);
  }
  std::vector<double> step, comm_time, finish, calls;  // per step
  std::vector<std::vector<double>> starts, ends, shares;  // per bucket, per step
  double overlapped_total = 0, comm_total = 0;
  auto within = [](const LedgerEntry* e, const LedgerEntry* s) { return e->start >= s->start && e->start <= s->end; };
  // The ledger keeps a request when it completes, and a small bucket may
  // complete before a larger one that started earlier: in start order, the
  // k-th request of a step is bucket k.
  std::stable_sort(comm.begin(), comm.end(),
                   [](const LedgerEntry* a, const LedgerEntry* b) { return a->start < b->start; });
  for (const LedgerEntry* s : step_spans) {
    double in_comm = 0, in_finish = 0;
    size_t k = 0;  // the k-th request of this step: bucket k
    for (const LedgerEntry* c : comm) {
      if (!within(c, s)) continue;
      double overlapped = 0;
      for (const LedgerEntry* b : computing) overlapped += inside(c->start, c->end, b->start, b->end);
      in_comm += c->end - c->start;
      overlapped_total += overlapped;
      if (c->op != facts::kIallreduce) continue;
      if (starts.size() <= k) starts.emplace_back(), ends.emplace_back(), shares.emplace_back();
      starts[k].push_back(c->start - s->start);
      ends[k].push_back(c->end - s->start);
      shares[k].push_back(c->end > c->start ? overlapped / (c->end - c->start) : 0.0);
      ++k;
    }
    double count = 0;
    for (const LedgerEntry* c : comm) count += within(c, s) ? 1 : 0;
    for (const LedgerEntry* e : finishing) in_finish += within(e, s) ? e->end - e->start : 0.0;
    step.push_back(s->end - s->start), comm_time.push_back(in_comm), finish.push_back(in_finish), calls.push_back(count);
    comm_total += in_comm;
  }
  Figures f{median(step), median(comm_time), median(finish), comm_total > 0 ? overlapped_total / comm_total : 0.0,
            median(calls), {}, {}, {}};
  for (size_t k = 0; k < starts.size(); ++k) {
    f.bucket_start.push_back(median(starts[k]));
    f.bucket_end.push_back(median(ends[k]));
    f.bucket_share.push_back(median(shares[k]));
  }
  return f;
}

// `steps` steps on one batch, forward, backward and the averaging (no
// update), with the ledger keeping every span.
Figures measure(Averaging& averaging, Way way, const Matrix& xb, const Labels& yb, long steps) {
  const bool was_tracing = ledger::tracing();
  ledger::set_tracing(true);
  CommAccess::rendezvous(averaging.world);
  ledger::take_entries();
  for (long i = 0; i < steps; ++i) {
    const ledger::Phase phase("step");
    averaging.model.forward(xb, yb);
    averaging.step(way);
  }
  const std::vector<LedgerEntry> entries = ledger::take_entries();
  ledger::set_tracing(was_tracing);
  return figures_of(entries);
}

int run(Communicator& world, int argc, char** argv) {
  Flags flags("ddp_train", "Trains the MLP with data parallelism, its gradients averaged by your GradientBuckets.");
  double& bucket_kb = flags.add_double("--bucket_kb", 256, "the buckets' cap in KiB (0: one bucket per parameter)");
  int& hidden_layers = flags.add_int("--hidden_layers", 2, "K: hidden layers");
  int& width = flags.add_int("--width", 256, "units in each hidden layer");
  bool& no_overlap = flags.add_switch("--no-overlap", "train with every gradient handed over after backward");
  int& measure_steps = flags.add_int("--measure_steps", 20, "steps measured each way after training");
  bool& no_progress = flags.add_switch(
      "--no-progress", "the kit does not test the requests in flight between layers (they then move only in your "
                       "calls: the measurement shows what that costs)");
  const TrainingFlags training = add_training_flags(
      flags, "global batch; each rank takes batch_size / ranks rows", kSgdInitLr,
      "initial SGD learning rate on the batch's mean gradient (falls linearly to 0 over the run)");
  const auto& [epochs, batch, init_lr, train_samples, test_samples, data_dir, report_path, trace_path, check] = training;
  if (const int status = parse_training_flags(flags, training, world, argc, argv); status >= 0) return status;

  const int ranks = world.size(), rank = world.rank();
  const bool lead = rank == 0;
  if (epochs < 1 || batch < ranks || hidden_layers < 1 || width < 1 || bucket_kb < 0 || measure_steps < 1) {
    if (lead)
      std::fprintf(stderr, "ddp_train: need --num_epoch >= 1, --batch_size >= ranks, --hidden_layers >= 1, "
                   "--width >= 1, --bucket_kb >= 0 and --measure_steps >= 1\n");
    return 2;
  }
  const long cap = static_cast<long>(bucket_kb * 1024 / sizeof(double));
  const Way trained = no_overlap ? Way::BucketsAfter : Way::BucketsAtOnce;

  SharedDataset data = open_dataset(data_dir, train_samples, test_samples);
  const LocalRows local = own_block(data, ranks, rank);
  const RowSource x = local.x;
  const Labels& y = local.y;
  const long usable = local.usable, mine = usable / ranks;

  const ModelHeap model_heap;
  DdpModel model(ddp_dims(hidden_layers, width), kSeed);
  const std::vector<long> elems = model.param_elems();
  student::Buckets buckets = student::make_buckets(elems, cap, world);
  const auto plan = student::plan_buckets(elems, cap);
  if (lead) {
    std::string dims;
    for (int d : ddp_dims(hidden_layers, width)) dims += (dims.empty() ? "" : "-") + std::to_string(d);
    std::printf("ddp_train: %d ranks, MLP %s (%zu parameters), buckets of %g KiB (%ld elements): %zu buckets, "
                "%s; batch %d (%d rows a rank), lr %g, %ld training rows, %ld test rows, data %s\n",
                ranks, dims.c_str(), elems.size(), bucket_kb, cap, plan.size(),
                no_overlap ? "handed over after backward" : "each started as it fills", batch, batch / ranks,
                init_lr, usable, static_cast<long>(data.test_x.rows()), data.dir.c_str());
  }
  Averaging averaging{world, model, buckets, !no_progress};
  Progress progress;
  TrainOptions options = training_options(training, progress, mine, batch / ranks);
  options.on_epoch = [](int epoch, double accuracy, double seconds) {
    std::printf("epoch %d: Test Acc: %.4f   (%.2f s of training)\n", epoch + 1, accuracy, seconds);
    std::fflush(stdout);
  };
  const long local_batch = batch / ranks;
  const long total = epochs * ((mine + local_batch - 1) / local_batch);
  LoopSteps steps;
  steps.train = [&](const Matrix& xb, const Labels& yb, long iteration) {
    Iteration done = forward_pass(model, xb, yb);
    averaging.step(trained);
    done.lr = linear_lr(init_lr, iteration, total);
    {
      const ledger::Phase phase("optimizer");
      model.sgd_step(done.lr);
    }
    return done;
  };
  // Every rank holds the same model: one evaluates.
  steps.evaluate = [&] { return lead ? evaluate(model, data.test_x, data.test_y) : 0.0; };
  LoopRecord record;
  run_epochs(x, y, local_batch, options, lead, steps, record);
  const double model_heap_bytes = model_heap.max_over_ranks(world);
  finish_trace(world, training, world.bytes_transferred());  // before the measuring steps below

  // The three ways, on this rank's first batch.
  const long measured = std::min<long>(measure_steps, mine / std::max(1L, local_batch));
  const Matrix xb = x.rows(0, local_batch);  // (local_batch, 784)
  const Labels yb = y.head(local_batch);
  nlohmann::json ways = nlohmann::json::object();
  if (lead)
    std::printf("\n%ld steps each way (forward, backward, averaging; no update), on %d ranks, medians of the steps: "
                "the slowest rank's step, the mean rank's allreduces:\n  %-46s %9s %11s %13s %11s %10s\n",
                measured, ranks, "way", "step ms", "allreduces", "allreduce ms", "overlapped", "finish ms");
  Figures mine_trained;
  for (const Way way : {Way::PerParameter, Way::BucketsAfter, Way::BucketsAtOnce}) {
    const Figures f = measure(averaging, way, xb, yb, measured);
    if (way == trained) mine_trained = f;
    const auto every = from_every_rank(world, {f.step, f.comm, f.share, f.finish});
    double step = 0, comm = 0, overlap = 0, finish = 0;
    for (const auto& r : every) step = std::max(step, r[0]), comm += r[1], overlap += r[2], finish += r[3];
    comm /= ranks, overlap /= ranks, finish /= ranks;
    if (lead)
      std::printf("  %-46s %9.3f %11.0f %13.3f %10.1f%% %10.3f%s\n", name_of(way), step * 1e3, f.allreduces,
                  comm * 1e3, 100 * overlap, finish * 1e3, way == trained ? "   (trained)" : "");
    ways[key_of(way)] = {{"step_seconds", step}, {"allreduces_per_step", f.allreduces},
                         {"allreduce_seconds", comm}, {"overlap_share", overlap}, {"finish_seconds", finish}};
  }
  // Rank 0's buckets in the way it trained, as the table below shows them.
  nlohmann::json buckets_json = nlohmann::json::array();
  for (size_t k = 0; k < mine_trained.bucket_start.size(); ++k)
    buckets_json.push_back({{"start_seconds", mine_trained.bucket_start[k]},
                            {"complete_seconds", mine_trained.bucket_end[k]},
                            {"overlap_share", mine_trained.bucket_share[k]}});
  if (lead) {
    std::printf("  step: forward, backward and the averaging; allreduce ms: a step's allreduces, each from its start "
                "to the moment the kit saw it complete; overlapped: the share of that time inside backward's "
                "computing; finish ms: the time in your finish()%s\n",
                no_progress ? "; --no-progress: a request moved only inside your calls and the layers' own"
                            : "; between layers the kit tests the requests in flight, so that they move (MPI moves "
                              "them only inside its calls)");
    std::printf("\nrank 0's buckets, %s (ms from the step's start):\n  %-6s %-24s %10s %11s %11s %11s\n",
                no_overlap ? "handed over after backward" : "each started as it fills", "bucket", "parameters",
                "KiB", "started", "completed", "overlapped");
    for (size_t k = 0; k < plan.size(); ++k) {
      long size = 0;
      std::string params;
      for (int p : plan[k]) size += elems[static_cast<size_t>(p)], params += (params.empty() ? "" : ",") + std::to_string(p);
      const bool have = k < mine_trained.bucket_start.size();
      std::printf("  %-6zu %-24s %10.1f %11.3f %11.3f %10.1f%%\n", k, params.c_str(), size * 8 / 1024.0,
                  have ? mine_trained.bucket_start[k] * 1e3 : 0.0, have ? mine_trained.bucket_end[k] * 1e3 : 0.0,
                  have ? 100 * mine_trained.bucket_share[k] : 0.0);
    }
    std::printf("\n");
  }

  RunReport report = common_report(record.test_accuracy, record.epoch_seconds, record.iterations, usable,
                                   static_cast<long>(data.test_x.rows()), model_heap_bytes, data.dir,
                                   record.collective_seconds);
  report.strategy = "ddp";
  report.dp_size = ranks;
  report.extra["ddp"] = {{"ranks", ranks},
                         {"bucket_kb", bucket_kb},
                         {"cap_elements", cap},
                         {"hidden_layers", hidden_layers},
                         {"parameters", elems},
                         {"plan", plan},
                         {"trained", key_of(trained)},
                         {"kit_progress", !no_progress},
                         {"measured_steps", measured},
                         {"ways", ways},
                         {"buckets", buckets_json}};
  return finish_run(world, report_path, report);
}

}  // namespace

int main(int argc, char** argv) { return program_main("ddp_train", argc, argv, run); }
