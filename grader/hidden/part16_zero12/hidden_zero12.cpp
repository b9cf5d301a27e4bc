// The grader's hidden cases of Part 16 (never shipped to students): more
// steps, other lengths, fewer elements than ranks, and a step of stage 2 on
// 120,000 parameters, six times the public cases' largest: the rules hold
// at any size. (The MLP zero_stages trains has 203,530; a step of it needs
// more than the harness's 12 MiB, which holds the parameters, the gradient,
// the call's arguments and its answer at once: kit/limits.py.) The checks are the
// public cases' (tests/part16_zero12/zero12_checks.h).
//   tools/kitrun -n 4 build/reference/kit_tests --gtest_filter='HiddenPart16ZeroStages4.*'
#include "kit_facts.h"  // KIT_SUITES_HiddenPart16ZeroStages
#include "part16_zero12/zero12_checks.h"

using namespace kit;
using dtrain::Zero1Adam;
using dtrain::Zero2Adam;

namespace {
constexpr long kLargeParameters = 120000;
}  // namespace

#define KIT_HIDDEN_ZERO12_CASES(Suite)                                                     \
  TEST(Suite, StageOneSixStepsOfThirtySeven) { check_zero12<Zero1Adam>(1, 6, 37, 0.05); } \
  TEST(Suite, StageTwoSixStepsOfThirtySeven) { check_zero12<Zero2Adam>(2, 6, 37, 0.05); } \
  TEST(Suite, StageOneOfTwoElements) { check_zero12<Zero1Adam>(1, 2, 2); }               \
  TEST(Suite, StageTwoOfTwoElements) { check_zero12<Zero2Adam>(2, 2, 2); }               \
  TEST(Suite, StageTwoOfAHundredAndTwentyThousand) { check_zero12_large<Zero2Adam>(2, kLargeParameters); }

KIT_SUITES_HiddenPart16ZeroStages(KIT_HIDDEN_ZERO12_CASES)  // one suite per run of kit/part_table.py
