// The grader's hidden cases of Part 13 (never shipped to students): other
// sizes and caps than the public cases', no parameter at all, a negative
// cap, and three backwards through one object. The checks are the public
// cases' (tests/part13_ddp/ddp_checks.h).
//   tools/kitrun -n 4 build/reference/kit_tests --gtest_filter='HiddenPart13Ddp4.*'
#include "part13_ddp/ddp_checks.h"
#include "kit_facts.h"  // KIT_SUITES_HiddenPart13Ddp

using namespace kit;

TEST(HiddenPart13Ddp1, PlanOfEqualSizesFillingTheCap) { check_plan({5, 5, 5, 5}, 10, {{3, 2}, {1, 0}}); }
TEST(HiddenPart13Ddp1, PlanOfNoParameter) { check_plan({}, 10, {}); }
TEST(HiddenPart13Ddp1, PlanWithANegativeCap) { check_plan({3, 1, 2}, -1, {{2}, {1}, {0}}); }
TEST(HiddenPart13Ddp1, PlanOfOnesInThrees) { check_plan({1, 1, 1, 1, 1, 1, 1}, 3, {{6, 5, 4}, {3, 2, 1}, {0}}); }

#define KIT_HIDDEN_DDP_CASES(Suite)                                                                    \
  TEST(Suite, LargeParametersAlone) { check_buckets({50, 1, 50}, 49, {{2}, {1}, {0}}); }               \
  TEST(Suite, ThreeBackwards) { check_buckets({5, 5, 5, 5}, 10, {{3, 2}, {1, 0}}, 3); }                \
  TEST(Suite, ManySmallBuckets) { check_buckets({1, 1, 1, 1, 1, 1, 1}, 3, {{6, 5, 4}, {3, 2, 1}, {0}}); }

KIT_SUITES_HiddenPart13Ddp(KIT_HIDDEN_DDP_CASES)  // one suite per run of kit/part_table.py
