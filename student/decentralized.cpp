// Part 15 (an extension part): decentralized SGD on a ring. You edit this
// file. Test it with `make test-part15`; the handout's Part 15 explains the
// task. Use comm.sendrecv only: the cases check that no collective was
// called, and check each message's neighbour and tag.
#include "decentral.h"
#include "not_implemented.h"

namespace dtrain {

void gossip_mix([[maybe_unused]] Vector& x,  // (N), mixed in place
                [[maybe_unused]] Communicator& comm) {
  // TODO(Part 15): exchange x with both neighbours (sendrecv, tags 0 then 1)
  // and average the three vectors; P == 2 and P == 1 are special.
  throw NotImplemented("gossip_mix", "Part 15");
}

void decentralized_sgd_step([[maybe_unused]] Vector& w,           // (N), updated in place
                            [[maybe_unused]] const Vector& grad,  // (N)
                            [[maybe_unused]] double lr,
                            [[maybe_unused]] Communicator& comm) {
  // TODO(Part 15): mix w with the neighbours', then take the SGD step.
  throw NotImplemented("decentralized_sgd_step", "Part 15");
}

}  // namespace dtrain
