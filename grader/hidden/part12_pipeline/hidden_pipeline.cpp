// The grader's hidden cases of Part 12 (never shipped to students): other
// numbers of micro-batches than the public cases' (one row each, too). The
// checks are the public cases' (tests/part12_pipeline/pipeline_checks.h).
//   tools/kitrun -n 4 build/reference/kit_tests --gtest_filter='HiddenPart12Pipeline4.*'
#include "part12_pipeline/pipeline_checks.h"
#include "kit_facts.h"  // KIT_SUITES_HiddenPart12Pipeline

using namespace kit;

#define KIT_HIDDEN_PIPELINE_CASES(Suite)                                                   \
  TEST(Suite, GPipeTwoMicroBatches) { check_step(Schedule::GPipe, 2); }                  \
  TEST(Suite, GPipeFiveMicroBatches) { check_step(Schedule::GPipe, 5); }                 \
  TEST(Suite, OneFOneBTwoMicroBatches) { check_step(Schedule::OneFOneB, 2); }            \
  TEST(Suite, OneFOneBFiveMicroBatches) { check_step(Schedule::OneFOneB, 5); }           \
  TEST(Suite, OneFOneBOneRowEach) { check_step(Schedule::OneFOneB, kBatch); }

KIT_SUITES_HiddenPart12Pipeline(KIT_HIDDEN_PIPELINE_CASES)  // one suite per run of kit/part_table.py
