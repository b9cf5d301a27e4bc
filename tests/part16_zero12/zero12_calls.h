// zero12_calls.h: Part 16's optimizers as the cases hold them. In the
// driven harness the optimizer lives in the student's process and each
// step is a call of it (zero12_forms.h); in one process, the object itself.
// A step is a student call (StudentScope: the ledger, the messages and the
// side's account name it "Zero1Adam::step"), and the judge sees the params
// it returned (observe.h).
#pragma once

#include <memory>
#include <string>
#include <utility>

#include "comm_runtime.h"
#include "observe.h"
#include "student_calls.h"
#include "zero12.h"
#include "zero12_forms.h"

namespace dtrain::student {

// What an optimizer keeps after a step.
struct Zero12State {
  int step_idx;
  Vector m, v;  // (S) each, if the code keeps its shard only
};

template <class Adam>
class StudentAdam {
 public:
  // type: "Zero1Adam" or "Zero2Adam", as the messages and the account name it.
  StudentAdam(const char* type, long n, Communicator& comm, double lr) : type_(type), step_name_(type_ + "::step") {
#ifdef KIT_DRIVEN
    o_ = calls::access<decltype(calls::zero12::make<Adam>)>((type_ + "::" + type_).c_str(), n, comm, lr);
#else
    o_ = std::make_unique<Adam>(n, comm, lr);
#endif
    comm_ = &comm;
  }

  void step(Vector& params, const Vector& grad) {  // (N) in place, (N)
    StudentScope scope(step_name_.c_str(), comm_, "comm",
                       {{"params", static_cast<long>(params.size()), 1}, {"grad", static_cast<long>(grad.size()), 1}});
#ifdef KIT_DRIVEN
    params = calls::remote<decltype(calls::zero12::step<Adam>)>(step_name_.c_str(), o_, params, grad);
#else
    o_->step(params, grad);
#endif
    observe(step_name_ + ".params", params);
  }

  Zero12State state() const {
#ifdef KIT_DRIVEN
    auto [idx, moments] = calls::access<decltype(calls::zero12::state<Adam>)>((type_ + "::state").c_str(), o_);
    return {static_cast<int>(idx(0)), std::move(moments.first), std::move(moments.second)};
#else
    return {o_->step_idx, o_->m, o_->v};
#endif
  }

  const std::string& type() const { return type_; }

 private:
  std::string type_, step_name_;
  Communicator* comm_ = nullptr;
#ifdef KIT_DRIVEN
  calls::Object<Adam> o_;
#else
  std::unique_ptr<Adam> o_;
#endif
};

}  // namespace dtrain::student
