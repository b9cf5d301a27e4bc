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

std::vector<std::string> stage3_traffic_problems(bool forward, const LayerShape& shape,
                                                 const std::vector<ledger::LoggedCall>& calls) {
  const std::string pass = forward ? "forward" : "backward";
  const long w = shape.w_shard, b = shape.b_shard;
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

LayerShape layer_shape(long in_dim, long out_dim, long dp_size, long rows) {
  LayerShape s;
  s.rows = rows;
  s.in_dim = in_dim;
  s.out_dim = out_dim;
  const long p = std::max(1L, dp_size);
  s.w_shard = (s.in_dim * s.out_dim + p - 1) / p;
  s.b_shard = (s.out_dim + p - 1) / p;
  return s;
}

// From the dimensions, not the shard members, which the student's code could have set.
LayerShape shape_before(const ZeroDPStage3FCLayer& layer, long rows) {
  return layer_shape(layer.in_dim, layer.out_dim, layer.dp_size, rows);
}

namespace {
const char* const kRoles[6] = {"the result", "the saved input x", "w_shard", "b_shard", "grad_w_shard", "grad_b_shard"};
}

int zero_role_number(const char* role) {
  for (int i = 0; i < 6; ++i)
    if (role == kRoles[i]) return i;
  return -1;
}

const char* zero_role(int number) { return number >= 0 && number < 6 ? kRoles[number] : nullptr; }

std::array<HeapWatch::Allowed, 6> allowed_blocks(const ZeroDPStage3FCLayer& layer, const Matrix& result,
                                                 const LayerShape& s, bool forward) {
  constexpr std::int64_t d = sizeof(double);
  return {{{result.data(), d * s.rows * (forward ? s.out_dim : s.in_dim), kRoles[0]},
           {layer.x.data(), d * s.rows * s.in_dim, kRoles[1]},
           {layer.w_shard.data(), d * s.w_shard, kRoles[2]},
           {layer.b_shard.data(), d * s.b_shard, kRoles[3]},
           {layer.grad_w_shard.data(), d * s.w_shard, kRoles[4]},
           {layer.grad_b_shard.data(), d * s.b_shard, kRoles[5]}}};
}

void restart_call_numbers() { g_forward_calls = g_backward_calls = 0; }

ZeroMemoryWatch::ZeroMemoryWatch(const ZeroDPStage3FCLayer& layer, bool forward, long rows, bool watch)
    : layer_(layer), forward_(forward), release_(watch), shape_(shape_before(layer, rows)) {
  if (watch && HeapWatch::available() && !HeapWatch::busy()) watch_ = std::make_unique<HeapWatch>();
}

ZeroMemoryWatch::Kept ZeroMemoryWatch::returned(const Matrix& result) {
  Kept out;
  if (watch_) {
    const auto may_stay = allowed_blocks(layer_, result, shape_, forward_);
    out.kept = watch_->kept(may_stay.data(), may_stay.size());
    out.watched = true;
    watch_.reset();
  }
  if (release_) platform::release_free_memory();
  return out;
}

ZeroCallRules::ZeroCallRules(const LayerShape& shape, bool forward)
    : forward_(forward), number_(forward ? ++g_forward_calls : ++g_backward_calls), shape_(shape) {}

void ZeroCallRules::returned(const ZeroMemoryWatch::Kept& kept) {
  std::vector<std::string> problems;
  if (kept.watched) {
    const std::string what = std::string(forward_ ? "forward" : "backward") + "() call " + std::to_string(number_);
    const std::string memory = memory_rule_problem(what, kept.kept, std::int64_t(shape_.in_dim) * shape_.out_dim * 8);
    if (!memory.empty()) problems.push_back(memory);
  }
  for (auto& p : stage3_traffic_problems(forward_, shape_, log_.take())) problems.push_back(std::move(p));
  std::string text;
  for (const auto& p : problems) text += (text.empty() ? "" : "\n") + p;
  if (!text.empty()) rule_broken(text);
}

}  // namespace dtrain
