// Part 11 (an extension part): allreduce from point-to-point calls. You
// edit this file. Test it with `make test-part11`; the handout's Part 11
// explains the task. Use comm.send, comm.recv and comm.sendrecv only: the
// cases check that no collective was called, and count your messages.
#include "not_implemented.h"
#include "ring_collectives.h"

namespace dtrain {

Vector naive_allreduce([[maybe_unused]] const Vector& src,  // (L)
                       [[maybe_unused]] Communicator& comm) {
  // TODO(Part 11):
  // - Which rank adds, and in which order must the others' buffers arrive
  //   for the sum to be the same on every run?
  // - A recv needs a destination of the right size before it is called.
  // - Two ranks that both send first to each other wait forever: who sends
  //   first on each link?
  throw NotImplemented("naive_allreduce", "Part 11");
}

Vector ring_allreduce([[maybe_unused]] const Vector& src,  // (L)
                      [[maybe_unused]] Communicator& comm) {
  // TODO(Part 11):
  // - Write down which block rank r sends and which it receives in each
  //   step, for n = 3, before writing code. After the reduce-scatter steps,
  //   which block does each rank hold in full?
  // - Every rank sends and receives in the same step: which call does both
  //   without two neighbours waiting for each other?
  // - Blocks may differ in size, and be empty, when L is not a multiple of n.
  throw NotImplemented("ring_allreduce", "Part 11");
}

}  // namespace dtrain
