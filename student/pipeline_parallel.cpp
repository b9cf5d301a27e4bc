// Part 12 (an extension part): one pipeline step, under GPipe or 1F1B. You
// edit this file. Test it with `make test-part12`; the handout's Part 12
// explains the schedules and draws their timelines.
#include "not_implemented.h"
#include "pipeline_parallel.h"

namespace dtrain {

void pipeline_step([[maybe_unused]] PipelineStage& stage, [[maybe_unused]] Communicator& comm,
                   [[maybe_unused]] Schedule schedule) {
  // TODO(Part 12):
  // - Before forward(mb), every stage but the first receives mb's activation
  //   from stage-1 (a Matrix of stage.rows(mb) by stage.in_dim); after it,
  //   every stage but the last sends the result to stage+1. Backward runs the
  //   other way, with stage.out_dim. The tag is the micro-batch index.
  // - GPipe first: all forwards, then all backwards. Then 1F1B: list the calls
  //   of each stage for K = 4, M = 8 on paper, as in the handout's timeline.
  // - In 1F1B's steady state a stage sends to a neighbour and must receive
  //   from the same one. If both send first, both wait forever: which call
  //   does both at once?
  throw NotImplemented("pipeline_step", "Part 12");
}

}  // namespace dtrain
