// zero12_forms.h: Part 16's optimizers as a driven call carries them
// (framework/calls/driven.h). Each optimizer lives in the student's process
// under a number (Object<T>, call_types.h): the framework's constructor
// makes it, a step takes params by value and returns them updated, and the
// kit reads its state (step_idx, m, v) by calls of its own. The student's
// process serves these (zero12_served.cpp); the harness calls them by their
// declarations (zero12_calls.h).
#pragma once

#include <memory>
#include <utility>

#include "call_types.h"
#include "zero12.h"

namespace dtrain::calls {

template <>
struct Value<Zero1Adam> : HeldObject<Zero1Adam> {};
template <>
struct Value<Zero2Adam> : HeldObject<Zero2Adam> {};

namespace zero12 {

template <class Adam>
Object<Adam> make(long n, Communicator& comm, double lr) {
  return {0, std::make_shared<Adam>(n, comm, lr)};
}

template <class Adam>
Vector step(Adam& optimizer, Vector params, const Vector& grad) {  // (N), (N) -> (N)
  optimizer.step(params, grad);
  return params;
}

// What the optimizer keeps: step_idx, m and v, as (step_idx as a one-element vector, m, v).
template <class Adam>
std::pair<Vector, std::pair<Vector, Vector>> state(Adam& optimizer) {
  Vector step_idx(1);
  step_idx(0) = optimizer.step_idx;
  return {step_idx, {optimizer.m, optimizer.v}};
}

}  // namespace zero12

}  // namespace dtrain::calls
