// ring_collectives.h: Part 11 (an extension part): the allreduce behind the
// collectives, built from point-to-point calls. Implemented in
// student/ring_collectives.cpp.
// Shapes: L = src.size(), n = comm.size(), B = 8 L bytes (the buffer).
#pragma once

#include "comm.h"
#include "tensor.h"

namespace dtrain {

// Both: the sum of every rank's src, on every rank, with send, recv and
// sendrecv only (no collective).

// naive: every rank sends its buffer to rank 0, which adds them in rank order
// and sends the sum back to each rank. Rank 0 sends (n-1) B bytes, every
// other rank B.
Vector naive_allreduce(const Vector& src,      // (L)
                       Communicator& comm);
// returns (L)

// ring: the L elements are cut into n blocks, block i holding elements
// [i*L/n, (i+1)*L/n) (integer division; a block may be empty). In n-1
// reduce-scatter steps rank r sends a partial block to rank (r+1)%n and adds
// the one it receives from rank (r-1+n)%n; in n-1 all-gather steps the summed
// blocks go round the ring. Each rank sends 2(n-1) messages, about
// 2(n-1)/n B bytes in all.
Vector ring_allreduce(const Vector& src,       // (L)
                      Communicator& comm);
// returns (L)

}  // namespace dtrain
