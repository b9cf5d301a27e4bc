// Part 16 (an extension part): ZeRO stages 1 and 2 for Adam. You edit this
// file. Test it with `make test-part16`; the handout's Part 16 explains the
// task. The cases check each step's calls (which collective, its size) and
// the memory each rank holds when step returns: keep m and v for this
// rank's shard only.
#include "not_implemented.h"
#include "zero12.h"

namespace dtrain {

void Zero1Adam::step([[maybe_unused]] Vector& params,       // (N), updated in place
                     [[maybe_unused]] const Vector& grad) {  // (N)
  // TODO(Part 16): average the whole gradient (allreduce), update this
  // rank's shard with Adam, and allgather the shards back into params.
  throw NotImplemented("Zero1Adam::step", "Part 16");
}

void Zero2Adam::step([[maybe_unused]] Vector& params,       // (N), updated in place
                     [[maybe_unused]] const Vector& grad) {  // (N)
  // TODO(Part 16): reduce-scatter the padded gradient, update this rank's
  // shard with Adam, and allgather the shards back into params.
  throw NotImplemented("Zero2Adam::step", "Part 16");
}

}  // namespace dtrain
