// ddp_remote.cpp: the harness's end of ddp_driven.h: each call of a
// RemoteBuckets is one driven call, by the name the student's process serves.
#include "ddp_driven.h"

namespace dtrain::calls::ddp {

RemoteBuckets::RemoteBuckets(const std::vector<long>& param_elems, long cap_elems, Communicator& comm)
    : o_(remote<decltype(make_buckets)>("GradientBuckets::GradientBuckets", param_elems, cap_elems, comm)) {}

RemoteBuckets::~RemoteBuckets() {
  try {
    remote<decltype(release)>("GradientBuckets::~GradientBuckets", o_);
  } catch (...) {
    // A destructor that failed in the student's process: its case has failed already, or will.
  }
}

void RemoteBuckets::grad_ready(int param, const Vector& grad) {
  remote_keyed<decltype(ddp::grad_ready)>("GradientBuckets::grad_ready", param, o_, param, grad);
}

void RemoteBuckets::finish(const std::vector<Vector*>& grads) {
  std::vector<Vector> given;
  for (const Vector* g : grads) given.push_back(*g);
  const std::vector<Vector> got = remote<decltype(ddp::finish)>("GradientBuckets::finish", o_, given);
  if (got.size() != grads.size()) throw std::runtime_error("finish gave back another number of gradients");
  for (std::size_t p = 0; p < grads.size(); ++p) *grads[p] = got[p];
}

std::vector<std::vector<int>> remote_plan_buckets(const std::vector<long>& param_elems, long cap_elems) {
  return remote<decltype(dtrain::plan_buckets)>("plan_buckets", param_elems, cap_elems);
}

}  // namespace dtrain::calls::ddp
