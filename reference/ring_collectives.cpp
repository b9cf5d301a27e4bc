// Part 11, the reference: allreduce from point-to-point calls.
#include "ring_collectives.h"

namespace dtrain {

Vector naive_allreduce(const Vector& src, Communicator& comm) {  // (L) -> (L)
  const int n = comm.size();
  Vector sum(src.size());  // (L)
  if (comm.rank() != 0) {
    comm.send(src, 0, 0);
    comm.recv(sum, 0, 1);
    return sum;
  }
  sum = src;
  Vector part(src.size());  // (L): one other rank's buffer
  for (int q = 1; q < n; ++q) {
    comm.recv(part, q, 0);
    sum += part;
  }
  for (int q = 1; q < n; ++q) comm.send(sum, q, 1);
  return sum;
}

Vector ring_allreduce(const Vector& src, Communicator& comm) {  // (L) -> (L)
  const int n = comm.size(), r = comm.rank();
  const Eigen::Index length = src.size();
  auto first = [&](int block) { return static_cast<Eigen::Index>(block) * length / n; };
  auto size = [&](int block) { return first(block + 1) - first(block); };
  auto wrap = [&](int block) { return ((block % n) + n) % n; };
  const int right = wrap(r + 1), left = wrap(r - 1);
  Vector acc = src;  // (L): partial sums, then the full sum
  // Reduce-scatter: in step s, pass on block r-s and add block r-s-1, so that
  // after n-1 steps this rank holds the whole sum of block r+1.
  for (int s = 0; s < n - 1; ++s) {
    const int out = wrap(r - s), in = wrap(r - s - 1);
    const Vector outgoing = acc.segment(first(out), size(out));  // (size(out))
    Vector incoming(size(in));                                    // (size(in))
    comm.sendrecv(outgoing, right, s, incoming, left, s);
    acc.segment(first(in), size(in)) += incoming;
  }
  // All-gather: in step s, pass on the summed block r+1-s and take block r-s.
  for (int s = 0; s < n - 1; ++s) {
    const int out = wrap(r + 1 - s), in = wrap(r - s);
    const Vector outgoing = acc.segment(first(out), size(out));
    Vector incoming(size(in));
    comm.sendrecv(outgoing, right, n - 1 + s, incoming, left, n - 1 + s);
    acc.segment(first(in), size(in)) = incoming;
  }
  return acc;
}

}  // namespace dtrain
