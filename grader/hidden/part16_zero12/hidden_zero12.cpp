// The grader's hidden cases of Part 16 (never shipped to students): more
// steps, other lengths, and fewer elements than ranks. The checks are the
// public cases' (tests/part16_zero12/zero12_checks.h).
//   tools/kitrun -n 4 build/reference/kit_tests --gtest_filter='HiddenPart16ZeroStages4.*'
#include "kit_facts.h"  // KIT_SUITES_HiddenPart16ZeroStages
#include "part16_zero12/zero12_checks.h"

using namespace kit;
using dtrain::Zero1Adam;
using dtrain::Zero2Adam;

#define KIT_HIDDEN_ZERO12_CASES(Suite)                                                     \
  TEST(Suite, StageOneSixStepsOfThirtySeven) { check_zero12<Zero1Adam>(1, 6, 37, 0.05); } \
  TEST(Suite, StageTwoSixStepsOfThirtySeven) { check_zero12<Zero2Adam>(2, 6, 37, 0.05); } \
  TEST(Suite, StageOneOfTwoElements) { check_zero12<Zero1Adam>(1, 2, 2); }               \
  TEST(Suite, StageTwoOfTwoElements) { check_zero12<Zero2Adam>(2, 2, 2); }

KIT_SUITES_HiddenPart16ZeroStages(KIT_HIDDEN_ZERO12_CASES)  // one suite per run of kit/part_table.py
