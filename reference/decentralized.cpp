// Part 15, the reference: decentralized SGD on a ring.
#include <stdexcept>
#include <string>

#include "decentral.h"

namespace dtrain {

void gossip_mix(Vector& x, Communicator& comm) {  // (N), in place
  const int p = comm.size(), r = comm.rank();
  if (p == 1) return;
  const int left = (r - 1 + p) % p, right = (r + 1) % p;
  Vector from_left(x.size());  // (N): the left neighbour's x before the step
  comm.sendrecv(x, right, 0, from_left, left, 0);
  if (p == 2) {
    x = (x + from_left) / 2.0;
    return;
  }
  Vector from_right(x.size());  // (N): the right neighbour's
  comm.sendrecv(x, left, 1, from_right, right, 1);
  x = (from_left + x + from_right) / 3.0;
}

void decentralized_sgd_step(Vector& w, const Vector& grad, double lr, Communicator& comm) {  // (N), (N)
  if (grad.size() != w.size())
    throw std::invalid_argument("decentralized_sgd_step: grad has " + std::to_string(grad.size()) +
                                " elements, w has " + std::to_string(w.size()));
  gossip_mix(w, comm);
  w -= lr * grad;
}

}  // namespace dtrain
