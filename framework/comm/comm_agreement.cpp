// comm_agreement.cpp: before a collective reaches MPI, the ranks compare what
// each is about to call; a difference becomes one message naming each
// rank's call, on every rank, instead of a hang or garbage (comm.h).
#include <algorithm>
#include <functional>
#include <sstream>
#include <utility>
#include <vector>

#include "call_context.h"
#include "comm_internal.h"
#include "comm_runtime.h"
#include "ledger.h"

namespace dtrain {

std::string rank_list(const std::vector<int>& ranks) {
  std::string out = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i) out += (i ? "," : "") + std::to_string(ranks[i]);
  return out;
}

namespace comm_detail {

// Every rank shares (operation, count, reduction, sequence number, function,
// rank in MPI's world) of this call; any difference in the first three is a
// mismatch. The message names ranks as the rest of the kit's reports do, by
// their rank in the world.
void agree(Communicator::Handle& h, OpCode op, long count, std::int64_t reduction) {
  if (h.size == 1) return;  // one rank agrees with itself: no round trip
  constexpr int kFields = link::kAgreeFields;
  const char* function = ledger::function_now_signal_safe();
  const int world_rank = Communicator::world().rank();
  const std::int64_t mine[kFields] = {op, count, reduction, h.calls, ledger::function_id(function), world_rank};
  std::vector<std::int64_t> all(static_cast<size_t>(kFields * h.size));
  // Where a hung case's ranks wait (the side polls, then sleeps: the call after it is made only once all are here).
  ask(link::request(link::Kind::Agree, h.comm), mine, sizeof mine, all.data(), all.size() * sizeof(std::int64_t));
  auto row = [&](int r) { return all.data() + kFields * r; };
  bool same = true;
  for (int r = 1; r < h.size && same; ++r) same = std::equal(row(r), row(r) + 3, row(0));
  if (same) return;
  throw CollectiveMismatch(disagreement_text(all.data(), h.size, h.calls, h.name, function,
                                             [](std::int64_t id) { return ledger::function_name(id); }));
}

std::string disagreement_text(const std::int64_t* rows, int size, long seq, const std::string& comm_name,
                              const char* function, const std::function<std::string(std::int64_t)>& function_name) {
  constexpr int kFields = link::kAgreeFields;
  auto row = [&](int r) { return rows + kFields * r; };
  // Group the ranks by what they called; name functions only where they differ.
  std::vector<std::pair<std::vector<std::int64_t>, std::vector<int>>> groups;
  for (int r = 0; r < size; ++r) {
    std::vector<std::int64_t> key(row(r), row(r) + 5);
    key[3] = 0;  // the sequence number is the same at a matched check
    auto g = std::find_if(groups.begin(), groups.end(), [&](const auto& x) { return x.first == key; });
    if (g == groups.end()) g = groups.insert(groups.end(), {key, {}});
    g->second.push_back(static_cast<int>(row(r)[5]));
  }
  // Name the members of a split (dp_comm of ranks 1,3); ranks 0..n-1 need no list.
  std::vector<int> members;
  bool first_ranks = true;
  for (int r = 0; r < size; ++r) {
    members.push_back(static_cast<int>(row(r)[5]));
    first_ranks = first_ranks && members.back() == r;
  }
  const bool functions_differ = std::any_of(groups.begin(), groups.end(),
                                            [&](const auto& g) { return g.first[4] != groups[0].first[4]; });
  size_t width = 0;
  for (const auto& g : groups) width = std::max(width, rank_list(g.second).size() + 1);
  std::ostringstream msg;
  msg << "collective #" << seq << " on " << comm_name;
  if (!first_ranks) msg << " (" << rank_list(members) << ")";
  if (function) msg << " in " << function;
  msg << ": ranks disagree";
  for (const auto& [key, ranks] : groups) {
    std::string who = rank_list(ranks) + ":";
    who.resize(width, ' ');
    msg << "\n  " << who << " " << (is_collective(key[0]) ? kOpNames[key[0]] : "?");
    if (key[0] != kSplit && key[0] != kBarrier) msg << ", " << plural(static_cast<long>(key[1]), "element");
    if (key[2] != kNoReduction && key[2] >= 0 && key[2] < 3) msg << " (" << kReductionNames[key[2]] << ")";
    if (functions_differ) {
      const std::string name = function_name(key[4]);
      msg << " in " << (name.empty() ? "another function" : name);
    }
  }
  return msg.str();
}

}  // namespace comm_detail

}  // namespace dtrain
