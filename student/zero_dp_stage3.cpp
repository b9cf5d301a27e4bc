// Parts 8 and 9: ZeRO stage 3. You edit this file. Test with
// `make test-part8` and `make test-part9`; the handout's ZeRO sections
// explain the tasks. The constructors, zero_grad and the optimizer's
// constructor are the framework's (zero_dp_stage3.h says what they do).
//
// P = dp_size; S = ceil(numel / P) is one shard, zero padding included.
#include "not_implemented.h"
#include "zero_dp_stage3.h"

namespace dtrain {

std::pair<Vector, int> ZeroDPStage3FCLayer::partition_flat_tensor([[maybe_unused]] const Matrix& tensor,
                                                                  [[maybe_unused]] int shard_idx,
                                                                  [[maybe_unused]] int num_shards) {
  // TODO(Part 8, forward):
  // - A row-major Matrix's data() already is its flattened form.
  // - How many elements must a shard have so that num_shards of them cover
  //   the whole tensor? The elements past the tensor's end are zeros.
  // - The returned size counts the padding too: every shard has the same size.
  throw NotImplemented("ZeroDPStage3FCLayer::partition_flat_tensor", "Part 8");
}

Matrix ZeroDPStage3FCLayer::forward([[maybe_unused]] const Matrix& x) {  // (B, Din) -> (B, Dout)
  // TODO(Part 8, forward):
  // - Save what backward will need.
  // - Rebuild the full weight and bias from every rank's shard, then drop the
  //   padding. Eigen::Map can view a flat buffer as a (Din, Dout) row-major matrix.
  // - gemm() (gemm.h) multiplies on the kit's fastest kernel and takes such a
  //   view as it is; Eigen's `*` works too, but rebuilds of this file are slower.
  // - The full parameters may live only inside this call: keeping them in a
  //   member, a static or a global fails the part-8 memory check.
  throw NotImplemented("ZeroDPStage3FCLayer::forward", "Part 8");
}

Matrix ZeroDPStage3FCLayer::backward([[maybe_unused]] const Matrix& output_grad) {  // (B, Dout) -> (B, Din)
  // TODO(Part 8, backward):
  // - The same rebuild as forward: grad_x needs the full weight.
  // - Compute this rank's gradients of the full W and b, then have each rank
  //   end up with the sum over ranks of its own shard only. Which collective
  //   does that, and how must its source buffer be padded?
  // - Store the results in grad_w_shard and grad_b_shard; return grad_x.
  throw NotImplemented("ZeroDPStage3FCLayer::backward", "Part 8");
}

void ZeroDPAdam::step() {
  ++step_idx;  // t of Adam's bias correction, starting at 1
  // TODO(Part 9):
  // - For every layer and each of its two shards (w and b), find or create
  //   its moments in `state` (keys "<layer index>.w" and "<layer index>.b").
  //   They start as zeros of the local shard's size.
  // - Apply the Adam update from the handout to the shard in place.
  // - Does this step need any communication? Think about what each rank
  //   owns before you write any.
  throw NotImplemented("ZeroDPAdam::step", "Part 9");
}

}  // namespace dtrain
