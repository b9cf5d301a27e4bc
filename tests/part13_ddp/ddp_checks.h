// ddp_checks.h: the checks of Part 13's cases, public and hidden.
//
// plan_buckets: the plan against the one written in the case.
// GradientBuckets: a backward is played on every rank: grad_ready for the
// parameters P-1 .. 0, then finish. Rank r's gradient of parameter p holds
// 1000 (p+1) + i + 100 r + 7 s at element i in step s, so the average over n
// ranks is 1000 (p+1) + i + 50 (n-1) + 7 s: a value says which parameter it
// came from, whether it was averaged, and from which step. The ledger's
// order of events (tests read it with a CallLog) says where each bucket's
// iallreduce started and where it was waited: the overlap is checked there,
// never by the clock.
#pragma once

#include <chrono>
#include <cmath>
#include <iomanip>
#include <limits>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "comm_runtime.h"
#include "ddp_calls.h"
#include "kit_facts.h"
#include "kit_test.h"

namespace kit {

using Plan = std::vector<std::vector<int>>;

inline std::string text_of(const std::vector<int>& v) {
  std::string s = "{";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "}";
}
inline std::string text_of(const std::vector<long>& v) { return text_of(std::vector<int>(v.begin(), v.end())); }
inline std::string text_of(const Plan& plan) {
  std::string s;
  for (const auto& bucket : plan) s += text_of(bucket);
  return s.empty() ? "no bucket" : s;
}

// What plan_buckets returned differs from `want`: the first bucket that differs, then both plans.
inline void check_plan(const std::vector<long>& elems, long cap, const Plan& want) {
  const Plan got = dtrain::student::plan_buckets(elems, cap);
  if (got == want) return;
  std::ostringstream why;
  why << "plan_buckets(sizes " << text_of(elems) << ", cap " << cap << "): ";
  size_t b = 0;
  while (b < got.size() && b < want.size() && got[b] == want[b]) ++b;
  if (b < got.size() && b < want.size())
    why << "bucket " << b << " holds parameters " << text_of(got[b]) << ", expected " << text_of(want[b]);
  else
    why << got.size() << " buckets, expected " << want.size();
  why << "\n  plan:     " << text_of(got) << "\n  expected: " << text_of(want);
  ADD_FAILURE() << why.str();
}

// An average is right to this share of its value (the handout's Debugging section says so).
constexpr double kAverageTolerance = 1e-12;

inline double local_grad(int step, int p, int r, long i) { return 1000.0 * (p + 1) + i + 100.0 * r + 7.0 * step; }
inline double mean_grad(int step, int p, int n, long i) { return 1000.0 * (p + 1) + i + 50.0 * (n - 1) + 7.0 * step; }

// One event of the ledger during a step: a call, a request seen complete by
// its owner, or test() calls that found one still running (tested_running),
// and the student call it happened in.
using Event = dtrain::ledger::LoggedCall::Event;

struct StepEvent {
  dtrain::ledger::LoggedCall call;
  int during;  // the parameter of the grad_ready call it happened in; -1: in finish
};

inline std::string where(int during) {
  return during < 0 ? std::string("finish") : "grad_ready(" + std::to_string(during) + ")";
}

inline std::string times(int n) {
  return n == 1 ? "once" : n == 2 ? "twice" : std::to_string(n) + " times";
}

inline std::string elements(long n) { return std::to_string(n) + (n == 1 ? " element" : " elements"); }

// More test() calls than this on one request within one grad_ready call, all
// finding it still running, are a loop that waits for it.
constexpr int kMostTestsInOneCall = dtrain::facts::part13_ddp::kMostTestsInOneCall;  // kit/rules/part13_ddp.py
// A step's message shows this many problems, then how many more there are.
constexpr size_t kProblemsShown = 8;

// The iallreduces as the student's object ran them: each with the
// parameters handed over since the one before (the bucket it closed), its
// elements and the call that started it; then the parameters no iallreduce
// followed.
inline std::string ran_text(const std::vector<const StepEvent*>& starts, int params) {
  std::string s;
  int next = params - 1;  // the last parameter handed over that no iallreduce followed yet
  for (const StepEvent* e : starts) {
    std::vector<int> closed;
    for (; next >= 0 && next >= e->during; --next) closed.push_back(next);  // finish (-1) follows them all
    s += (s.empty() ? "" : "; ") + (closed.empty() ? "" : text_of(closed) + " ") + elements(e->call.count) + " in " +
         where(e->during);
  }
  std::vector<int> left;
  for (; next >= 0; --next) left.push_back(next);
  if (!left.empty()) s += (s.empty() ? "" : "; ") + text_of(left) + " with no iallreduce";
  return s.empty() ? "no iallreduce" : s;
}

inline std::string expected_text(const std::vector<long>& elems, const Plan& plan) {
  std::string s;
  for (const auto& bucket : plan) {
    long size = 0;
    for (int p : bucket) size += elems[static_cast<size_t>(p)];
    s += (s.empty() ? "" : "; ") + text_of(bucket) + " " + elements(size) + " in " + where(bucket.back());
  }
  return s.empty() ? "no iallreduce" : s;
}

// The order of events against the plan: exactly one iallreduce per bucket,
// in the plan's order, each started in the grad_ready call that completes
// its bucket; no other call; no waiting in grad_ready (wait(), or a loop of
// test()); every request waited by the end of finish. In finish a request
// may be waited or tested in any order and as often as one likes. Returns
// what differs, one line each, the counts and the plan first.
inline std::vector<std::string> event_problems(const std::vector<long>& elems, const Plan& plan,
                                               const std::vector<StepEvent>& events) {
  std::vector<std::string> basic, calls, overlap, waits, unwaited;
  std::vector<const StepEvent*> starts;
  for (const StepEvent& e : events) {
    if (e.call.event != Event::Call) continue;
    if (e.call.op == dtrain::facts::kIallreduce) {
      starts.push_back(&e);
    } else {
      calls.push_back(where(e.during) + " called " + dtrain::facts::kOpNames[e.call.op] + " on " + e.call.comm +
                      (e.call.op == dtrain::facts::kAllreduce ?
                      ", a blocking collective: start each bucket's allreduce with iallreduce, so that "
                      "backward goes on while it runs" : ": a bucket needs one iallreduce, nothing else"));
    }
  }
  if (starts.size() != plan.size())
    basic.push_back(std::to_string(starts.size()) + " iallreduce calls for " + std::to_string(plan.size()) +
                    " buckets " + text_of(plan) + ": one per bucket");
  for (size_t b = 0; b < starts.size() && b < plan.size(); ++b) {
    const std::vector<int>& bucket = plan[b];
    long size = 0;
    for (int p : bucket) size += elems[static_cast<size_t>(p)];
    const int completes = bucket.back();  // its last parameter in backward's order
    const StepEvent& e = *starts[b];
    const std::string name = "bucket " + std::to_string(b) + " (parameters " + text_of(bucket) + ")";
    if (e.call.count != size) {
      basic.push_back(name + " holds " + std::to_string(size) + " elements, but the iallreduce started for it in " +
                      where(e.during) + " reduces " + std::to_string(e.call.count) + " (the plan differs?)");
    } else if (e.during < 0) {
      overlap.push_back(name + " started its iallreduce in finish, after backward had produced every gradient: "
                        "nothing overlaps; start it in grad_ready(" + std::to_string(completes) +
                        "), the call that completes the bucket");
    } else if (e.during > completes) {
      std::vector<int> missing;
      for (int p : bucket)
        if (p < e.during) missing.push_back(p);
      overlap.push_back(name + " started its iallreduce in " + where(e.during) + ", before the gradients of " +
                        "parameters " + text_of(missing) + " arrived: its sum misses them; start it in grad_ready(" +
                        std::to_string(completes) + "), the call that completes the bucket");
    } else if (e.during < completes) {
      overlap.push_back(name + " started its iallreduce in " + where(e.during) + ", after grad_ready(" +
                        std::to_string(completes) + ") completed it: backward had already gone on without it");
    }
  }
  // "the iallreduce started in grad_ready(3) (bucket 0)": a request of this step, by its start.
  auto request_name = [&](long id) {
    for (size_t b = 0; b < starts.size(); ++b)
      if (starts[b]->call.request == id)
        return "the iallreduce started in " + where(starts[b]->during) + " (bucket " + std::to_string(b) + ")";
    return std::string("a request started before this step");
  };
  for (const StepEvent& e : events) {
    if (e.during < 0 || e.call.event == Event::Call) continue;
    // Backward stops while grad_ready waits, by wait() or by a loop of
    // test() until the request completes, whatever it is called.
    if (e.call.event == Event::Waited)
      waits.push_back(where(e.during) + " waited for " + request_name(e.call.request) + ": backward stops there "
                      "until the allreduce ends; wait for the requests in finish");
    else if (e.call.failed_tests > kMostTestsInOneCall)
      waits.push_back(where(e.during) + " tested " + request_name(e.call.request) + " " +
                      std::to_string(e.call.failed_tests) + " times while it was still running" +
                      (e.call.event == Event::Tested ? ", until it completed" : "") + ": a loop of test() is a wait, and "
                      "backward stops there; in grad_ready test a request at most " + times(kMostTestsInOneCall) +
                      " a call, and wait for the requests in finish");
  }
  for (size_t b = 0; b < starts.size(); ++b) {
    bool claimed = false;
    for (const StepEvent& e : events)
      claimed = claimed || ((e.call.event == Event::Waited || e.call.event == Event::Tested) &&
                            e.call.request == starts[b]->call.request);
    if (!claimed)
      unwaited.push_back(request_name(starts[b]->call.request) +
                         " was not waited by the end of finish (no wait(), no test() that returned true)");
  }
  std::vector<std::string> problems;
  for (auto* group : {&basic, &calls, &overlap, &waits, &unwaited})
    problems.insert(problems.end(), group->begin(), group->end());
  return problems;
}

// A step's message: its problems (the first kProblemsShown, then how many
// more), then what the object ran beside the plan expected.
inline std::string step_message(int step, const std::vector<long>& elems, const Plan& plan,
                                const std::vector<StepEvent>& events, const std::vector<std::string>& problems) {
  std::vector<const StepEvent*> starts;
  for (const StepEvent& e : events)
    if (e.call.event == Event::Call && e.call.op == dtrain::facts::kIallreduce) starts.push_back(&e);
  std::string text = "step " + std::to_string(step) + ": ";
  for (size_t i = 0; i < problems.size() && i < kProblemsShown; ++i) text += (i ? "\n" : "") + problems[i];
  if (problems.size() > kProblemsShown)
    text += "\n(+" + std::to_string(problems.size() - kProblemsShown) + " more)";
  return text + "\n  ran:      " + ran_text(starts, static_cast<int>(elems.size())) +
         "\n  expected: " + expected_text(elems, plan);
}

// `steps` backwards through one GradientBuckets on every rank of the case.
inline void check_buckets(const std::vector<long>& elems, long cap, const Plan& plan, int steps = 2) {
  Communicator& comm = world();
  const int n = comm.size(), r = comm.rank(), params = static_cast<int>(elems.size());
  dtrain::student::Buckets buckets = dtrain::student::make_buckets(elems, cap, comm);
  std::vector<std::string> last_problems;  // the step before's
  for (int step = 0; step < steps; ++step) {
    std::vector<Vector> grads, averaged;  // (P): what backward hands over; what finish writes back
    std::vector<Vector*> out;
    for (int p = 0; p < params; ++p) {
      const long size = elems[static_cast<size_t>(p)];
      grads.emplace_back(size);
      for (long i = 0; i < size; ++i) grads.back()(i) = local_grad(step, p, r, i);
      averaged.push_back(Vector::Constant(size, std::numeric_limits<double>::quiet_NaN()));
    }
    for (Vector& v : averaged) out.push_back(&v);
    std::vector<StepEvent> events;
    dtrain::ledger::CallLog log;
    for (int p = params - 1; p >= 0; --p) {
      // The last rank's backward runs a little behind, as a slower rank's
      // does: a rank that waits for a bucket in grad_ready, however it
      // waits, is seen waiting.
      if (r == n - 1 && n > 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      dtrain::student::grad_ready(*buckets, comm, p, grads[static_cast<size_t>(p)]);
      for (const auto& call : log.take()) events.push_back({call, p});
    }
    dtrain::student::finish(*buckets, comm, out);
    for (const auto& call : log.take()) events.push_back({call, -1});
    std::vector<std::string> problems = event_problems(elems, plan, events);
    if (!problems.empty() && problems == last_problems)
      ADD_FAILURE() << "step " << step << ": the same problems as step " << step - 1;
    else if (!problems.empty())
      ADD_FAILURE() << step_message(step, elems, plan, events, problems);
    last_problems = std::move(problems);
    for (int p = 0; p < params; ++p) {
      const Vector& got = averaged[static_cast<size_t>(p)];
      const long size = elems[static_cast<size_t>(p)];
      if (got.size() != size) {
        ADD_FAILURE() << "step " << step << ": parameter " << p << "'s averaged gradient (grads[" << p << "]) has "
                      << got.size() << " elements, expected " << size;
        continue;
      }
      // Equal to a plain allreduce's average, to kAverageTolerance of its size.
      for (long i = 0; i < size; ++i) {
        const double want = mean_grad(step, p, n, i), tolerance = kAverageTolerance * std::abs(want);
        if (std::abs(got(i) - want) <= tolerance) continue;
        ADD_FAILURE() << "step " << step << ": parameter " << p << "'s averaged gradient (grads[" << p
                      << "]) differs at element " << i << ": expected " << want << ", got " << got(i)
                      << " (difference " << std::setprecision(3) << got(i) - want << ", tolerance " << tolerance << ")"
                      << (std::abs(got(i) - n * want) <= 1e-9 * std::abs(n * want)
                              ? "; the sum: not divided by the ranks?" : "");
        break;
      }
    }
  }
}

}  // namespace kit
