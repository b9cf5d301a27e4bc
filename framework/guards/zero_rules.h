// zero_rules.h: ZeRO-3's two rules, checked around every call of a student's
// ZeroDPStage3FCLayer::forward and backward (student_calls.h), in every case
// that makes one (public, hidden, training) and in the trainers:
//   traffic: forward all-gathers the weight's and the bias's shards; backward
//            all-gathers the weight's shards and reduce-scatters both
//            gradients; nothing more, and the bytes of comm.h's formula;
//   memory:  no heap block the call allocated itself is still allocated
//            when it returns, except its result, the saved input and the
//            shards, each up to the size its role needs, taken before the
//            student runs (heap_watch.h; checked where the malloc tracker is
//            linked and a case is running, since it costs a table's reset
//            per call).
// A broken rule is reported through rule_broken (observe.h): a failure of
// the running case, or an exception in a trainer.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "comm_runtime.h"
#include "heap_watch.h"
#include "zero_dp_stage3.h"

namespace dtrain {

// Blocks below this are bookkeeping, not a weight (the layers' are megabytes).
constexpr std::int64_t kHeapSlack = 64 * 1024;

// The blocks a forward or backward call may leave allocated, each with the
// size its role needs: the result (rows x out_dim, or rows x in_dim for
// backward), the saved input (rows x in_dim), the shards and the gradient
// shards (S_w, S_b). `rows` is the batch of the input the call was given;
// the shapes are the layer's dimensions as they were before the student
// ran, since a call may change the layer's public members, and the shard
// sizes follow from them (comm.h's S = ceil(numel / P)).
struct LayerShape {
  long rows = 0, in_dim = 0, out_dim = 0, w_shard = 0, b_shard = 0;
};
LayerShape layer_shape(long in_dim, long out_dim, long dp_size, long rows);
LayerShape shape_before(const ZeroDPStage3FCLayer& layer, long rows);

// One line per way a call's collectives differ from ZeRO-3's ("backward:
// all-gather of 12 elements on comm that ZeRO-3's backward doesn't need");
// none if they match. From the ledger's log alone: the bytes follow from
// the calls (comm.h's formulas), and the Communicator's counter is a field
// of an object the student's code holds.
std::vector<std::string> stage3_traffic_problems(bool forward, const LayerShape& shape,
                                                 const std::vector<ledger::LoggedCall>& calls);

// The memory rule's message, or "" when `kept` is within the slack.
std::string memory_rule_problem(const std::string& what, const HeapWatch::Kept& kept, std::int64_t full_weight_bytes);

std::array<HeapWatch::Allowed, 6> allowed_blocks(const ZeroDPStage3FCLayer& layer, const Matrix& result,
                                                 const LayerShape& shape, bool forward);

// Numbers the calls of one case ("forward() call 2"); the test harness
// starts again at every case.
void restart_call_numbers();

// The memory rule where the student's code runs: a heap watch around one
// forward or backward call (null where the rule isn't checked: no tracker
// linked, another watch living, or outside a case).
class ZeroMemoryWatch {
 public:
  // `watch`: whether this process checks the rule now.
  ZeroMemoryWatch(const ZeroDPStage3FCLayer& layer, bool forward, long rows, bool watch);
  // What the call left allocated beyond what may stay, the call having
  // returned `result`; `watched` false where nothing was watched. What
  // glibc keeps for reuse goes back too: the MPI side reads this process's
  // memory as the call returns, and would count it as held.
  struct Kept {
    bool watched = false;
    HeapWatch::Kept kept;
  };
  Kept returned(const Matrix& result);

 private:
  const ZeroDPStage3FCLayer& layer_;
  bool forward_, release_;
  LayerShape shape_;
  std::unique_ptr<HeapWatch> watch_;
};

// The roles of allowed_blocks, by number: what travels from the student's
// process for a Kept's oversized_role (driven mode), never its text.
int zero_role_number(const char* role);   // -1: none
const char* zero_role(int number);        // nullptr: none

// Judges one forward or backward call by both rules, where the harness
// runs: the memory rule from what the watch around the call kept, the
// traffic rule from the requests logged while this lives.
class ZeroCallRules {
 public:
  ZeroCallRules(const LayerShape& shape, bool forward);
  ZeroCallRules(const ZeroCallRules&) = delete;
  ZeroCallRules& operator=(const ZeroCallRules&) = delete;
  // The call returned; report what broke.
  void returned(const ZeroMemoryWatch::Kept& kept);

 private:
  bool forward_;
  int number_;
  LayerShape shape_;
  ledger::CallLog log_;
};

}  // namespace dtrain
