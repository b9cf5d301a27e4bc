// Parts 2-7: the communication of tensor- and data-parallel training. You
// edit this file. Test a part with `make test-partN` (N = 2..7); the
// handout's section of the same number explains each task.
//
// Shapes use the legend of tensor.h (B, Din, Dout, P = mp_size). A Matrix is
// row-major: its storage, and so its MPI buffer, is its rows one after another.
#include "func_impl.h"
#include "not_implemented.h"

namespace dtrain {

ParallelInfo get_info([[maybe_unused]] Communicator& comm, [[maybe_unused]] int rank,
                      [[maybe_unused]] int mp_size, [[maybe_unused]] int dp_size,
                      [[maybe_unused]] bool is_fc1, [[maybe_unused]] bool is_megatron_mp,
                      [[maybe_unused]] int in_dim, [[maybe_unused]] int out_dim) {
  // TODO(Part 2):
  // - Ranks are model-parallel-major: work out mp_idx and dp_idx from the
  //   worked 8-rank example in the handout.
  // - comm.split(color, key) groups the ranks that pass the same color and
  //   orders each group by key. Which ranks share a model-parallel group?
  //   Which share a data-parallel group? Choose keys so that
  //   mp_comm.rank() == mp_idx and dp_comm.rank() == dp_idx.
  // - Which dimension of FC1 and of FC2 is divided by mp_size, for the naive
  //   scheme and for Megatron? The handout's sharding diagram answers it.
  // - Build the result with braces, in ParallelInfo's member order; a
  //   Communicator cannot be copied, so std::move it in.
  throw NotImplemented("get_info", "Part 2");
}

Matrix naive_collect_forward_input([[maybe_unused]] const Matrix& x,  // (B, Din/P)
                                   [[maybe_unused]] Communicator& mp_comm, [[maybe_unused]] int mp_size) {
  // TODO(Part 3): every rank holds a block of columns and needs all of them.
  // - allgather stacks each rank's buffer after the previous one. Since x is
  //   row-major, what does the destination hold if you allocate it with the
  //   final (B, Din) shape? Draw it for B = 2 before writing code.
  // - Allocate a destination whose shape matches what allgather really
  //   writes, then move each rank's block into its place in the result.
  throw NotImplemented("naive_collect_forward_input", "Part 3");
}

Matrix naive_collect_forward_output([[maybe_unused]] const Matrix& out,  // (B, Dout/P)
                                    [[maybe_unused]] Communicator& mp_comm, [[maybe_unused]] int mp_size) {
  // TODO(Part 3): the same problem as the input, at point B. Write a helper
  // rather than the same code twice.
  throw NotImplemented("naive_collect_forward_output", "Part 3");
}

Matrix megatron_collect_forward_input([[maybe_unused]] const Matrix& x,  // (B, Din/P)
                                      [[maybe_unused]] Communicator& mp_comm, [[maybe_unused]] int mp_size) {
  // TODO(Part 4): with FC1 split by columns and FC2 by rows, what part of
  // FC2's input does this rank's weight block need, and where is it already?
  throw NotImplemented("megatron_collect_forward_input", "Part 4");
}

Matrix megatron_collect_forward_output([[maybe_unused]] const Matrix& out,  // (B, Dout), partial
                                       [[maybe_unused]] Communicator& mp_comm, [[maybe_unused]] int mp_size) {
  // TODO(Part 4): each rank multiplied its rows of W2 with its columns of the
  // input. Work a 1 x 2 times 2 x 1 product by hand, split over two ranks:
  // how do the two partial results combine into the real one?
  throw NotImplemented("megatron_collect_forward_output", "Part 4");
}

Matrix naive_collect_backward_output([[maybe_unused]] const Matrix& output_grad,  // (B, Dout)
                                     [[maybe_unused]] int mp_group_idx, [[maybe_unused]] int mp_size) {
  // TODO(Part 5): every rank has the gradient of the whole output, but its
  // weights produced only some of the output columns. No communication.
  throw NotImplemented("naive_collect_backward_output", "Part 5");
}

Matrix naive_collect_backward_x([[maybe_unused]] const Matrix& grad_x,  // (B, Din), partial
                                [[maybe_unused]] Communicator& mp_comm, [[maybe_unused]] int mp_size) {
  // TODO(Part 5): each rank computed a partial gradient for all Din inputs;
  // the true gradient is their sum, and each rank only needs its own block
  // of columns. One collective does both.
  // - reduce_scatter hands rank r the r-th consecutive block of the source
  //   buffer. In a row-major (B, Din) matrix, is a block of columns
  //   consecutive? Arrange the source so that it is.
  throw NotImplemented("naive_collect_backward_x", "Part 5");
}

Matrix megatron_collect_backward_output([[maybe_unused]] const Matrix& output_grad,  // (B, Dout)
                                        [[maybe_unused]] int mp_group_idx, [[maybe_unused]] int mp_size) {
  // TODO(Part 6): which output columns did this rank's FC2 block produce?
  throw NotImplemented("megatron_collect_backward_output", "Part 6");
}

Matrix megatron_collect_backward_x([[maybe_unused]] const Matrix& grad_x,  // (B, Din/P)
                                   [[maybe_unused]] Communicator& mp_comm, [[maybe_unused]] int mp_size) {
  // TODO(Part 6): which input columns does this rank's gradient belong to,
  // and which rank's FC1 block produced them?
  throw NotImplemented("megatron_collect_backward_x", "Part 6");
}

std::pair<Matrix, Matrix> collect_weight_grad([[maybe_unused]] const Matrix& grad_w,  // (Din, Dout)
                                              [[maybe_unused]] const Matrix& grad_b,  // (1, Dout)
                                              [[maybe_unused]] Communicator& dp_comm) {
  // TODO(Part 7): each data-parallel rank saw a different slice of the batch.
  // Combine the gradients so every rank applies the same update, the one a
  // single process would apply to the whole batch (read the loss: is it a
  // sum or a mean over samples?).
  throw NotImplemented("collect_weight_grad", "Part 7");
}

}  // namespace dtrain
