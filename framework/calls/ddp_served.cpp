// ddp_served.cpp: Part 13's functions and GradientBuckets as the student's
// process of the driven mode serves them (ddp_driven.h), registered by the
// part's own file.
#include "ddp_driven.h"

namespace dtrain::calls::ddp {

Object<GradientBuckets> make_buckets(std::vector<long> param_elems, long cap_elems, Communicator& comm) {
  return {0, std::make_shared<GradientBuckets>(param_elems, cap_elems, comm)};
}

void grad_ready(GradientBuckets& buckets, int param, const Vector& grad) { buckets.grad_ready(param, grad); }

std::vector<Vector> finish(GradientBuckets& buckets, std::vector<Vector> grads) {
  std::vector<Vector*> places;
  for (Vector& g : grads) places.push_back(&g);
  buckets.finish(places);
  return grads;
}

void release(Object<GradientBuckets> buckets) { objects<GradientBuckets>().erase(buckets.id); }

}  // namespace dtrain::calls::ddp

KIT_SERVED("plan_buckets", &dtrain::plan_buckets);
KIT_SERVED("GradientBuckets::GradientBuckets", &dtrain::calls::ddp::make_buckets);
KIT_SERVED("GradientBuckets::grad_ready", &dtrain::calls::ddp::grad_ready);
KIT_SERVED("GradientBuckets::finish", &dtrain::calls::ddp::finish);
KIT_SERVED("GradientBuckets::~GradientBuckets", &dtrain::calls::ddp::release);
