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

// One line per way a call's collectives differ from ZeRO-3's ("backward:
// all-gather of 12 elements on comm that ZeRO-3's backward doesn't need");
// none if they match. From the ledger's log alone: the bytes follow from
// the calls (comm.h's formulas), and the Communicator's counter is a field
// of an object the student's code holds.
std::vector<std::string> stage3_traffic_problems(bool forward, const ZeroDPStage3FCLayer& layer,
                                                 const std::vector<ledger::LoggedCall>& calls);

// The memory rule's message, or "" when `kept` is within the slack.
std::string memory_rule_problem(const std::string& what, const HeapWatch::Kept& kept, std::int64_t full_weight_bytes);

// The blocks a forward or backward call may leave allocated, each with the
// size its role needs: the result (rows x out_dim, or rows x in_dim for
// backward), the saved input (rows x in_dim), the shards and the gradient
// shards (S_w, S_b). `rows` is the batch of the input the call was given;
// the shapes are the layer's as they were before the student ran, since a
// call may change the layer's public members.
struct LayerShape {
  long rows = 0, in_dim = 0, out_dim = 0, w_shard = 0, b_shard = 0;
};
LayerShape shape_before(const ZeroDPStage3FCLayer& layer, long rows);
std::array<HeapWatch::Allowed, 6> allowed_blocks(const ZeroDPStage3FCLayer& layer, const Matrix& result,
                                                 const LayerShape& shape, bool forward);

// Numbers the calls of one case ("forward() call 2"); the test harness
// starts again at every case.
void restart_call_numbers();

// Lives around one forward or backward call.
class ZeroCallRules {
 public:
  // `rows`: the batch of the call's input (x, or output_grad), as given.
  ZeroCallRules(const ZeroDPStage3FCLayer& layer, bool forward, long rows);
  ~ZeroCallRules();
  ZeroCallRules(const ZeroCallRules&) = delete;
  ZeroCallRules& operator=(const ZeroCallRules&) = delete;
  // The call returned `result`: check both rules, report what broke.
  void returned(const Matrix& result);

 private:
  const ZeroDPStage3FCLayer& layer_;
  bool forward_;
  int number_;
  LayerShape shape_;
  ledger::CallLog log_;
  std::unique_ptr<HeapWatch> watch_;  // null where the memory rule isn't checked
};

}  // namespace dtrain
