// The pipeline schedules as rules and as timelines (framework/model/pipeline_runtime.h):
// one process, no MPI.
//   build/framework_tests --gtest_filter='PipelineSchedule*'   (CTest: framework/units)
// The timelines' expected values are worked by hand below, or are the
// lecture's (K-1)/(M+K-1).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "pipeline_runtime.h"

using dtrain::Schedule;

namespace {

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at < text.size()) {
    const size_t space = text.find(' ', at);
    out.push_back(text.substr(at, space - at));
    at = space == std::string::npos ? text.size() : space + 1;
  }
  return out;
}

TEST(PipelineSchedule, CallsFollowTheRules) {
  EXPECT_EQ(dtrain::schedule_calls(Schedule::GPipe, 4, 1, 3), split("F0 F1 F2 B0 B1 B2"));
  // 1F1B, K = 4, M = 5: stage k warms up with K-k-1 forwards.
  EXPECT_EQ(dtrain::schedule_calls(Schedule::OneFOneB, 4, 0, 5), split("F0 F1 F2 F3 B0 F4 B1 B2 B3 B4"));
  EXPECT_EQ(dtrain::schedule_calls(Schedule::OneFOneB, 4, 2, 5), split("F0 F1 B0 F2 B1 F3 B2 F4 B3 B4"));
  EXPECT_EQ(dtrain::schedule_calls(Schedule::OneFOneB, 4, 3, 5), split("F0 B0 F1 B1 F2 B2 F3 B3 F4 B4"));
  // Fewer micro-batches than the warm-up wants: all forwards first, as GPipe.
  EXPECT_EQ(dtrain::schedule_calls(Schedule::OneFOneB, 4, 0, 2), split("F0 F1 B0 B1"));
  EXPECT_THROW(dtrain::schedule_calls(Schedule::GPipe, 2, 2, 1), std::invalid_argument);
  EXPECT_THROW(dtrain::schedule_calls(Schedule::GPipe, 2, 0, 0), std::invalid_argument);
}

TEST(PipelineSchedule, StashesGPipeHoldsAllOneFOneBHoldsTheStagesAfter) {
  for (int m : {1, 3, 8}) {
    for (int k = 0; k < 4; ++k) {
      EXPECT_EQ(dtrain::stash_formula(Schedule::GPipe, 4, k, m), m);
      EXPECT_EQ(dtrain::stash_formula(Schedule::OneFOneB, 4, k, m), std::min(4 - k, m)) << "stage " << k << ", M " << m;
    }
  }
}

// Equal stages: every stage idles (K-1)/(M+K-1) of the step, under both
// schedules, whatever a forward costs against a backward under GPipe.
TEST(PipelineSchedule, EqualStagesIdleTheFormulasShare) {
  for (int k = 1; k <= 5; ++k) {
    for (int m : {1, 2, 3, 4, 8, 16}) {
      const double formula = dtrain::bubble_formula(k, m);
      for (Schedule schedule : {Schedule::GPipe, Schedule::OneFOneB}) {
        const auto t = dtrain::play_schedule(schedule, m, std::vector<double>(k, 1.0), std::vector<double>(k, 1.0));
        EXPECT_DOUBLE_EQ(t.step, 2.0 * (m + k - 1)) << "K " << k << ", M " << m;
        for (int s = 0; s < k; ++s) EXPECT_NEAR(t.idle_share[s], formula, 1e-12) << "K " << k << ", M " << m;
      }
      const auto g = dtrain::play_schedule(Schedule::GPipe, m, std::vector<double>(k, 1.0), std::vector<double>(k, 2.0));
      for (int s = 0; s < k; ++s) EXPECT_NEAR(g.idle_share[s], formula, 1e-12) << "GPipe, backward 2x, K " << k;
    }
  }
  EXPECT_DOUBLE_EQ(dtrain::bubble_formula(4, 8), 3.0 / 11.0);
}

// K = 2, M = 2, stage 0 twice as slow as stage 1 (forward = backward):
//   GPipe  stage 0: F0 0-2, F1 2-4, (idle 4-6), B0 6-8, B1 8-10
//          stage 1: F0 2-3, F1 4-5, B0 5-6, B1 6-7          step 10
//   1F1B   stage 0: F0 0-2, F1 2-4, B0 4-6, B1 6-8
//          stage 1: F0 2-3, B0 3-4, F1 4-5, B1 5-6          step 8
TEST(PipelineSchedule, UnequalStagesPlayOutAsWorkedByHand) {
  const auto g = dtrain::play_schedule(Schedule::GPipe, 2, {2, 1}, {2, 1});
  EXPECT_DOUBLE_EQ(g.step, 10);
  EXPECT_DOUBLE_EQ(g.idle_share[0], 1 - 8.0 / 10);
  EXPECT_DOUBLE_EQ(g.idle_share[1], 1 - 4.0 / 10);
  const auto f = dtrain::play_schedule(Schedule::OneFOneB, 2, {2, 1}, {2, 1});
  EXPECT_DOUBLE_EQ(f.step, 8);
  EXPECT_DOUBLE_EQ(f.idle_share[0], 0);
  EXPECT_DOUBLE_EQ(f.idle_share[1], 0.5);
  EXPECT_THROW(dtrain::play_schedule(Schedule::GPipe, 2, {1, 1}, {1}), std::invalid_argument);
}

}  // namespace
