// ddp_calls.h: Part 13's student functions, called as student_calls.h calls
// the others, so that the ledger and the messages name them and the judge
// sees what they returned (observe.h). The tests and ddp_train call these.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "comm_runtime.h"
#include "ddp.h"
#include "observe.h"
#include "student_calls.h"  // KIT_STUDENT_CALL: in the driven harness, a call of the student's process

// In the driven harness the object lives in the student's process, and the
// harness holds it by its number (ddp_driven.h): the same calls, each one
// driven, so that the side places every request by the call that made it.
#ifdef KIT_DRIVEN
#include "ddp_driven.h"
#endif

namespace dtrain::student {

// A plan as one row for the judge: the number of buckets, then each bucket's
// length and its parameter indices.
inline std::vector<double> flat_plan(const std::vector<std::vector<int>>& plan) {
  std::vector<double> row{static_cast<double>(plan.size())};
  for (const auto& bucket : plan) {
    row.push_back(static_cast<double>(bucket.size()));
    row.insert(row.end(), bucket.begin(), bucket.end());
  }
  return row;
}

inline std::vector<std::vector<int>> plan_buckets(const std::vector<long>& param_elems, long cap_elems) {
  StudentScope scope("plan_buckets", nullptr, nullptr, {{"param_elems", static_cast<long>(param_elems.size()), 1}});
  auto plan = KIT_STUDENT_CALL(plan_buckets, param_elems, cap_elems);
  const std::vector<double> row = flat_plan(plan);
  observe("plan_buckets", Vector(Eigen::Map<const Vector>(row.data(), static_cast<Eigen::Index>(row.size()))));
  return plan;
}

// The object and its calls. Its destructor is the student's too: it runs
// inside a scope of its own when the owner lets go of it.
#ifdef KIT_DRIVEN
using BucketsObject = calls::ddp::RemoteBuckets;
#else
using BucketsObject = GradientBuckets;
#endif
struct BucketsDeleter {
  void operator()(BucketsObject* b) const {
    StudentScope scope("GradientBuckets::~GradientBuckets");
    delete b;
  }
};
using Buckets = std::unique_ptr<BucketsObject, BucketsDeleter>;

inline Buckets make_buckets(const std::vector<long>& param_elems, long cap_elems, Communicator& comm) {
  StudentScope scope("GradientBuckets::GradientBuckets", &comm, "comm",
                     {{"param_elems", static_cast<long>(param_elems.size()), 1}});
  return Buckets(new BucketsObject(param_elems, cap_elems, comm));
}

// `comm`: the one the object was made with, named as its parameter was.
inline void grad_ready(BucketsObject& buckets, Communicator& comm, int param, const Vector& grad) {
  // The parameter goes to the MPI side with the call: it places each iallreduce by it (kit/rules/part13_ddp.py).
  StudentScope scope("GradientBuckets::grad_ready", &comm, "comm", {{"grad", static_cast<long>(grad.size()), 1}},
                     param);
  buckets.grad_ready(param, grad);
}

inline void finish(BucketsObject& buckets, Communicator& comm, const std::vector<Vector*>& grads) {
  StudentScope scope("GradientBuckets::finish", &comm, "comm");
  buckets.finish(grads);
  for (size_t p = 0; p < grads.size(); ++p) observe("finish.grad" + std::to_string(p), *grads[p]);
}

}  // namespace dtrain::student
