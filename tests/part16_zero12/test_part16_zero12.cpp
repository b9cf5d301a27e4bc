// Part 16 (an extension part): Zero1Adam::step and Zero2Adam::step, on each
// rank count of its runs (kit/part_table.py; one suite per rank count), with N
// divisible by the rank count and not, and on a larger model checked element
// by element (the checks: zero12_checks.h).
//   make test-part16
#include "kit_facts.h"  // KIT_SUITES_Part16ZeroStages
#include "zero12_checks.h"

using namespace kit;
using dtrain::Zero1Adam;
using dtrain::Zero2Adam;

// The same cases for each rank count; kit/part_table.py runs suite Part16ZeroStagesN on N ranks.
#define KIT_ZERO12_CASES(Suite)                                                                                   \
  TEST(Suite, StageOneOneStepOfTwelve) { check_zero12<Zero1Adam>(1, 1, 12); }                                  \
  TEST(Suite, StageOneThreeStepsOfThirteen) { check_zero12<Zero1Adam>(1, 3, 13); }                             \
  TEST(Suite, StageTwoOneStepOfTwelve) { check_zero12<Zero2Adam>(2, 1, 12); }                                  \
  TEST(Suite, StageTwoThreeStepsOfThirteen) { check_zero12<Zero2Adam>(2, 3, 13); }                             \
  TEST(Suite, StageOneOfTwentyThousand) { check_zero12_large<Zero1Adam>(1, 20000); }                                 \
  TEST(Suite, StageTwoOfTwentyThousand) { check_zero12_large<Zero2Adam>(2, 20000); }                                 \
  TEST(Suite, BothRefuseParamsOfAnotherLength) {                                                               \
    check_zero12_refuses_another_length<Zero1Adam>(1);                                                         \
    check_zero12_refuses_another_length<Zero2Adam>(2);                                                         \
  }

KIT_SUITES_Part16ZeroStages(KIT_ZERO12_CASES)  // one suite per run of kit/part_table.py
