// Part 13 (an extension part): gradient buckets and their overlap with
// backward. You edit this file. Test it with `make test-part13`; the
// handout's Part 13 explains buckets, their order and the overlap, and
// draws the timeline.
#include "ddp.h"
#include "not_implemented.h"

namespace dtrain {

std::vector<std::vector<int>> plan_buckets([[maybe_unused]] const std::vector<long>& param_elems,  // (P)
                                           [[maybe_unused]] long cap_elems) {
  // TODO(Part 13):
  // - Walk the parameters from the last to the first: that is the order in
  //   which backward hands their gradients over.
  // - Work out by hand: sizes {6, 2, 4, 2, 3, 1} with caps 5, 6 and 0.
  throw NotImplemented("plan_buckets", "Part 13");
}

// What a GradientBuckets keeps between calls: yours to define. For example
// the communicator, each bucket's parameters and flat buffers, how many of
// its gradients have arrived, and the Request of its allreduce.
struct GradientBuckets::State {};

GradientBuckets::GradientBuckets([[maybe_unused]] const std::vector<long>& param_elems,
                                 [[maybe_unused]] long cap_elems, [[maybe_unused]] Communicator& comm) {
  // TODO(Part 13): plan the buckets (plan_buckets) and allocate their buffers.
  throw NotImplemented("GradientBuckets", "Part 13");
}

GradientBuckets::~GradientBuckets() = default;

void GradientBuckets::grad_ready([[maybe_unused]] int param, [[maybe_unused]] const Vector& grad) {
  // TODO(Part 13):
  // - Copy grad into its bucket's buffer.
  // - The moment a bucket has all its gradients, start its allreduce with
  //   comm.iallreduce and keep the Request: backward goes on meanwhile.
  //   Waiting here would stop backward until the allreduce ends.
  throw NotImplemented("GradientBuckets::grad_ready", "Part 13");
}

void GradientBuckets::finish([[maybe_unused]] const std::vector<Vector*>& grads) {
  // TODO(Part 13):
  // - Wait for every request, average, and write each parameter's gradient
  //   back into *grads[param].
  // - The next backward starts with empty buckets.
  throw NotImplemented("GradientBuckets::finish", "Part 13");
}

}  // namespace dtrain
