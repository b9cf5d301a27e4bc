// zero_rules.cpp: see zero_rules.h.
#include "zero_rules.h"

#include <algorithm>
#include <array>

#include "observe.h"
#include "platform.h"

namespace dtrain {

namespace {

struct Needed {
  facts::OpCode op;
  long count;
  const char* what;
};

std::string in_words(facts::OpCode op) {
  return op == facts::kAllgather ? "all-gather" : op == facts::kReduceScatter ? "reduce-scatter" : facts::kOpNames[op];
}

std::string elements(long n) { return std::to_string(n) + (n == 1 ? " element" : " elements"); }

int g_forward_calls = 0, g_backward_calls = 0;

}  // namespace

std::vector<std::string> stage3_traffic_problems(bool forward, const ZeroDPStage3FCLayer& layer,
                                                 const std::vector<ledger::LoggedCall>& calls) {
  const std::string pass = forward ? "forward" : "backward";
  const long w = layer.w_shard_size, b = layer.b_shard_size;
  std::vector<Needed> needed =
      forward ? std::vector<Needed>{{facts::kAllgather, w, "the weight's shards"},
                                    {facts::kAllgather, b, "the bias's shards"}}
              : std::vector<Needed>{{facts::kAllgather, w, "the weight's shards, for grad_x"},
                                    {facts::kReduceScatter, w, "the weight gradient"},
                                    {facts::kReduceScatter, b, "the bias gradient"}};
  std::vector<std::string> problems;
  for (const auto& call : calls) {
    const auto match = std::find_if(needed.begin(), needed.end(),
                                    [&](const Needed& n) { return call.op == n.op && call.count == n.count; });
    if (match != needed.end()) {
      needed.erase(match);
      continue;
    }
    std::string why = pass + ": " + in_words(call.op) + " of " + elements(call.count) + " on " + call.comm +
                      " that ZeRO-3's " + pass + " doesn't need";
    if (!forward && call.op == facts::kAllgather && call.count == b)
      why += " (the bias isn't used to compute gradients)";
    else if (call.op == facts::kAllreduce)
      why += " (an allreduce leaves every rank the whole tensor: ZeRO-3 reduce-scatters gradients)";
    problems.push_back(why);
  }
  for (const Needed& n : needed)
    problems.push_back(pass + ": no " + in_words(n.op) + " of " + elements(n.count) + " (" + n.what +
                       "), which ZeRO-3's " + pass + " makes");
  return problems;
}

std::string memory_rule_problem(const std::string& what, const HeapWatch::Kept& kept, std::int64_t full_weight_bytes) {
  if (kept.bytes <= kHeapSlack && kept.complete) return "";
  std::string oversized;
  if (kept.oversized_role != nullptr)
    oversized = " Of them, " + std::to_string(kept.oversized_bytes - kept.oversized_allowed) + " bytes lie past " +
                kept.oversized_role + " in its block of " + std::to_string(kept.oversized_bytes) +
                " bytes, where its shape needs " + std::to_string(kept.oversized_allowed) + ".";
  return what + " kept " + std::to_string(kept.bytes) + " bytes in " + std::to_string(kept.blocks) + " block" +
         (kept.blocks == 1 ? "" : "s") + " that it allocated and did not free, against a full weight of " +
         std::to_string(full_weight_bytes) + " bytes." + oversized +
         " Under ZeRO-3 the full W and b may exist only inside forward/backward: not in a member, a static, "
         "a global, a leaked allocation or behind another block (handout: ZeRO background, the memory rule)." +
         (kept.complete ? "" : " (More blocks were allocated at once than the check can follow.)");
}

LayerShape shape_before(const ZeroDPStage3FCLayer& layer, long rows) {
  LayerShape s;
  s.rows = rows;
  s.in_dim = layer.in_dim;
  s.out_dim = layer.out_dim;
  // The shard sizes from the dimensions (comm.h's S = ceil(numel / P)), not
  // from the members, which the student's code could have set.
  const long p = std::max(1, layer.dp_size);
  s.w_shard = (s.in_dim * s.out_dim + p - 1) / p;
  s.b_shard = (s.out_dim + p - 1) / p;
  return s;
}

std::array<HeapWatch::Allowed, 6> allowed_blocks(const ZeroDPStage3FCLayer& layer, const Matrix& result,
                                                 const LayerShape& s, bool forward) {
  constexpr std::int64_t d = sizeof(double);
  return {{{result.data(), d * s.rows * (forward ? s.out_dim : s.in_dim), "the result"},
           {layer.x.data(), d * s.rows * s.in_dim, "the saved input x"},
           {layer.w_shard.data(), d * s.w_shard, "w_shard"},
           {layer.b_shard.data(), d * s.b_shard, "b_shard"},
           {layer.grad_w_shard.data(), d * s.w_shard, "grad_w_shard"},
           {layer.grad_b_shard.data(), d * s.b_shard, "grad_b_shard"}}};
}

void restart_call_numbers() { g_forward_calls = g_backward_calls = 0; }

ZeroCallRules::ZeroCallRules(const ZeroDPStage3FCLayer& layer, bool forward, long rows)
    : layer_(layer), forward_(forward), number_(forward ? ++g_forward_calls : ++g_backward_calls),
      shape_(shape_before(layer, rows)) {
  if (under_test() && HeapWatch::available() && !HeapWatch::busy()) watch_ = std::make_unique<HeapWatch>();
}

ZeroCallRules::~ZeroCallRules() = default;

void ZeroCallRules::returned(const Matrix& result) {
  std::vector<std::string> problems;
  if (watch_) {
    const auto may_stay = allowed_blocks(layer_, result, shape_, forward_);
    const HeapWatch::Kept kept = watch_->kept(may_stay.data(), may_stay.size());
    watch_.reset();
    const std::string what = std::string(forward_ ? "forward" : "backward") + "() call " + std::to_string(number_);
    const std::string memory = memory_rule_problem(what, kept, std::int64_t(shape_.in_dim) * shape_.out_dim * 8);
    if (!memory.empty()) problems.push_back(memory);
  }
  // The same rule as the kernel sees it, judged outside this process: the
  // MPI side reads this process's memory as the call returns (StudentScope
  // marks it), since the heap watch above reads tables this process can
  // write. What glibc keeps for reuse goes back first, or the kernel would
  // count it as held.
  if (under_test()) platform::release_free_memory();
  for (auto& p : stage3_traffic_problems(forward_, layer_, log_.take()))
    problems.push_back(std::move(p));
  std::string text;
  for (const auto& p : problems) text += (text.empty() ? "" : "\n") + p;
  if (!text.empty()) rule_broken(text);
}

}  // namespace dtrain
