// Part 14 (an extension part): top-k compression with error feedback. You
// edit this file. Test it with `make test-part14`; the handout's Part 14
// explains the task. sparse_allreduce_mean uses comm.allgather alone: the
// cases check its calls, their order and their sizes.
#include "compress.h"
#include "not_implemented.h"

namespace dtrain {

Sparse topk([[maybe_unused]] const Vector& v,  // (N)
            [[maybe_unused]] long k) {
  // TODO(Part 14): keep the min(k, N) entries of largest magnitude (the lower
  // index wins a tie), their indices ascending.
  throw NotImplemented("topk", "Part 14");
}

Sparse compress_with_feedback([[maybe_unused]] ErrorFeedback& ef,   // residual (N), updated
                              [[maybe_unused]] const Vector& grad,  // (N)
                              [[maybe_unused]] long k) {
  // TODO(Part 14): add the residual, keep the top k, and keep what was not sent.
  throw NotImplemented("compress_with_feedback", "Part 14");
}

Vector sparse_allreduce_mean([[maybe_unused]] const Sparse& mine,  // K entries of N
                             [[maybe_unused]] Communicator& comm) {
  // TODO(Part 14): allgather the indices (as doubles), then the values, and
  // add them into a dense vector of length N; divide by the rank count.
  throw NotImplemented("sparse_allreduce_mean", "Part 14");
}

}  // namespace dtrain
