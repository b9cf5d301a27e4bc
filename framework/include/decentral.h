// decentral.h: Part 15 (an extension part): decentralized SGD on a ring,
// where each rank talks only to its two neighbours. Implemented in
// student/decentralized.cpp.
// Shapes: N = x.size() (one flat parameter vector), P = comm.size(); rank
// r's neighbours are left = (r-1+P)%P and right = (r+1)%P.
#pragma once

#include "comm.h"
#include "tensor.h"

namespace dtrain {

// One gossip step: x <- (x_left + x + x_right) / 3, where x_left and x_right
// are the neighbours' x before the step (P == 2: (x + x_other) / 2; P == 1:
// x unchanged, and no call). sendrecv only, no collective: first send x to
// the right while receiving from the left (tag 0), then send x to the left
// while receiving from the right (tag 1); both send x as it was before the
// step. P == 2 makes the first exchange alone (tag 0, the other rank both
// ways). Each rank sends 2 N doubles a step (P == 2: N).
void gossip_mix(Vector& x,            // (N), mixed in place
                Communicator& comm);

// The lecture's decentralized SGD step: w <- mix(w) - lr * grad, where grad is
// this rank's gradient at its w before the step (the caller computed it on
// its own batch). Its traffic is exactly one gossip step's: it may call
// gossip_mix. grad.size() != w.size() throws std::invalid_argument.
void decentralized_sgd_step(Vector& w,            // (N), updated in place
                            const Vector& grad,   // (N)
                            double lr,
                            Communicator& comm);

}  // namespace dtrain
