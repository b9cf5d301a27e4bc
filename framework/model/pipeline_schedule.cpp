// pipeline_schedule.cpp: the two schedules as rules (which calls, in which
// order, how many stashes) and as a timeline played out from per-stage
// times (pipeline_runtime.h). The tests check a student's step against the
// rules; the pipeline trainer and `make explore` set measured bubbles
// against the timeline.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "pipeline_runtime.h"

namespace dtrain {

namespace {

// Forwards before the first backward: all M under GPipe; under 1F1B, enough
// to fill the stages after this one.
int warmup_forwards(Schedule schedule, int stages, int stage, int m) {
  return schedule == Schedule::GPipe ? m : std::min(stages - stage - 1, m);
}

void check_shape(int stages, int stage, int m) {
  if (stages < 1 || stage < 0 || stage >= stages || m < 1)
    throw std::invalid_argument("a pipeline schedule needs stages >= 1, 0 <= stage < stages and micro-batches >= 1; "
                                "got stages " + std::to_string(stages) + ", stage " + std::to_string(stage) +
                                ", micro-batches " + std::to_string(m));
}

}  // namespace

std::vector<std::string> schedule_calls(Schedule schedule, int stages, int stage, int m) {
  check_shape(stages, stage, m);
  std::vector<std::string> calls;
  auto f = [&](int mb) { calls.push_back("F" + std::to_string(mb)); };
  auto b = [&](int mb) { calls.push_back("B" + std::to_string(mb)); };
  const int warmup = warmup_forwards(schedule, stages, stage, m);
  for (int mb = 0; mb < warmup; ++mb) f(mb);
  for (int i = 0; i < m - warmup; ++i) {
    f(warmup + i);
    b(i);
  }
  for (int mb = m - warmup; mb < m; ++mb) b(mb);
  return calls;
}

int stash_formula(Schedule schedule, int stages, int stage, int m) {
  check_shape(stages, stage, m);
  const int warmup = warmup_forwards(schedule, stages, stage, m);
  return warmup < m ? warmup + 1 : m;
}

double bubble_formula(int stages, int m) {
  return static_cast<double>(stages - 1) / static_cast<double>(m + stages - 1);
}

ScheduleTimes play_schedule(Schedule schedule, int m, const std::vector<double>& forward,
                            const std::vector<double>& backward) {
  const int k = static_cast<int>(forward.size());
  if (k < 1 || backward.size() != forward.size())
    throw std::invalid_argument("play_schedule: one forward and one backward time per stage, got " +
                                std::to_string(forward.size()) + " and " + std::to_string(backward.size()));
  std::vector<std::vector<std::string>> order;
  for (int s = 0; s < k; ++s) order.push_back(schedule_calls(schedule, k, s, m));
  // When each call ends: f_end[s][mb], b_end[s][mb]; < 0 until it has run.
  std::vector<std::vector<double>> f_end(k, std::vector<double>(m, -1)), b_end = f_end;
  std::vector<size_t> next(k, 0);
  std::vector<double> free_at(k, 0);  // when stage s finishes its last call so far
  for (bool moved = true; moved;) {
    moved = false;
    for (int s = 0; s < k; ++s) {
      while (next[s] < order[s].size()) {
        const std::string& call = order[s][next[s]];
        const int mb = std::stoi(call.substr(1));
        // What the call waits for: the activation from s-1, or the gradient from s+1.
        double ready;
        if (call[0] == 'F') {
          ready = s == 0 ? 0 : f_end[s - 1][mb];
        } else {
          ready = s == k - 1 ? f_end[s][mb] : b_end[s + 1][mb];
        }
        if (ready < 0) break;
        const double end = std::max(ready, free_at[s]) + (call[0] == 'F' ? forward[s] : backward[s]);
        (call[0] == 'F' ? f_end : b_end)[s][mb] = end;
        free_at[s] = end;
        ++next[s];
        moved = true;
      }
    }
  }
  for (int s = 0; s < k; ++s)
    if (next[s] < order[s].size()) throw std::logic_error("play_schedule: the schedule does not finish");
  ScheduleTimes out;
  out.step = *std::max_element(free_at.begin(), free_at.end());
  for (int s = 0; s < k; ++s)
    out.idle_share.push_back(out.step > 0 ? std::max(0.0, 1.0 - m * (forward[s] + backward[s]) / out.step) : 0.0);
  return out;
}

}  // namespace dtrain
