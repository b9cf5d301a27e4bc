// ddp_driven.h: Part 13's functions and its GradientBuckets as driven calls
// (driven.h): the object lives in the student's process under a number;
// each of its calls is one call of the harness's, so the side places every
// iallreduce it starts by the grad_ready that started it. The student's
// process serves them (ddp_served.cpp); a driven harness calls them through
// RemoteBuckets (ddp_remote.cpp).
#pragma once

#include <vector>

#include "ddp.h"
#include "driven.h"

namespace dtrain::calls {

template <>
struct Value<GradientBuckets> : HeldObject<GradientBuckets> {};

namespace ddp {

Object<GradientBuckets> make_buckets(std::vector<long> param_elems, long cap_elems, Communicator& comm);
void grad_ready(GradientBuckets& buckets, int param, const Vector& grad);
// The averaged gradients, written into `grads` (one per parameter, sized as it).
std::vector<Vector> finish(GradientBuckets& buckets, std::vector<Vector> grads);
// The object goes: its destructor (the student's) runs, as a call of its own.
void release(Object<GradientBuckets> buckets);

class RemoteBuckets {
 public:
  RemoteBuckets(const std::vector<long>& param_elems, long cap_elems, Communicator& comm);
  ~RemoteBuckets();
  RemoteBuckets(const RemoteBuckets&) = delete;
  RemoteBuckets& operator=(const RemoteBuckets&) = delete;
  void grad_ready(int param, const Vector& grad);
  void finish(const std::vector<Vector*>& grads);

 private:
  Object<GradientBuckets> o_;
};

std::vector<std::vector<int>> remote_plan_buckets(const std::vector<long>& param_elems, long cap_elems);

}  // namespace ddp

}  // namespace dtrain::calls
