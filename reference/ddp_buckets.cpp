// Part 13, the reference: gradient buckets whose allreduces overlap the rest
// of backward.
#include "ddp.h"

namespace dtrain {

std::vector<std::vector<int>> plan_buckets(const std::vector<long>& param_elems, long cap_elems) {
  std::vector<std::vector<int>> buckets;
  long filled = 0;  // elements in the open bucket (buckets.back())
  for (int p = static_cast<int>(param_elems.size()) - 1; p >= 0; --p) {
    const long n = param_elems[static_cast<size_t>(p)];
    if (buckets.empty() || cap_elems <= 0 || filled + n > cap_elems) {
      buckets.emplace_back();
      filled = 0;
    }
    buckets.back().push_back(p);
    filled += n;
  }
  return buckets;
}

struct GradientBuckets::State {
  Communicator& comm;
  std::vector<long> elems;  // (P)
  struct Bucket {
    std::vector<int> params;    // walk order: descending
    std::vector<long> offsets;  // of each parameter in the flat buffers
    Vector send, sum;           // (the bucket's elements): this rank's gradients, then the sum over the ranks
    size_t arrived = 0;         // gradients copied in during this backward
    Request request;            // its allreduce, once started
  };
  std::vector<Bucket> buckets;
  std::vector<size_t> bucket_of, slot_of;  // (P): a parameter's bucket, and its place there
};

GradientBuckets::GradientBuckets(const std::vector<long>& param_elems, long cap_elems, Communicator& comm)
    : state(new State{comm, param_elems, {}, std::vector<size_t>(param_elems.size()),
                      std::vector<size_t>(param_elems.size())}) {
  for (const std::vector<int>& params : plan_buckets(param_elems, cap_elems)) {
    State::Bucket b;
    b.params = params;
    long size = 0;
    for (size_t i = 0; i < params.size(); ++i) {
      const size_t p = static_cast<size_t>(params[i]);
      state->bucket_of[p] = state->buckets.size();
      state->slot_of[p] = i;
      b.offsets.push_back(size);
      size += param_elems[p];
    }
    b.send.resize(size);
    b.sum.resize(size);
    state->buckets.push_back(std::move(b));
  }
}

GradientBuckets::~GradientBuckets() = default;

void GradientBuckets::grad_ready(int param, const Vector& grad) {
  State& s = *state;
  const size_t p = static_cast<size_t>(param);
  State::Bucket& b = s.buckets[s.bucket_of[p]];
  b.send.segment(b.offsets[s.slot_of[p]], s.elems[p]) = grad;
  // The bucket's last gradient: its allreduce runs while backward goes on.
  if (++b.arrived == b.params.size()) b.request = s.comm.iallreduce(b.send, b.sum, Op::Sum);
}

void GradientBuckets::finish(const std::vector<Vector*>& grads) {
  State& s = *state;
  const double share = 1.0 / s.comm.size();
  for (State::Bucket& b : s.buckets) {
    b.request.wait();
    for (size_t i = 0; i < b.params.size(); ++i) {
      const size_t p = static_cast<size_t>(b.params[i]);
      *grads[p] = b.sum.segment(b.offsets[i], s.elems[p]) * share;
    }
    b.arrived = 0;
  }
}

}  // namespace dtrain
