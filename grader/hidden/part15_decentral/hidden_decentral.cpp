// The grader's hidden cases of Part 15 (never shipped to students): longer
// runs and other lengths than the public cases'. The checks are the public
// cases' (tests/part15_decentral/decentral_checks.h).
//   tools/kitrun -n 4 build/reference/kit_tests --gtest_filter='HiddenPart15Decentral4.*'
#include "part15_decentral/decentral_checks.h"
#include "kit_facts.h"  // KIT_SUITES_HiddenPart15Decentral

using namespace kit;

#define KIT_HIDDEN_DECENTRAL_CASES(Suite)                                           \
  TEST(Suite, TenGossipStepsOfElevenElements) { check_gossip(10, 11); }           \
  TEST(Suite, SixSgdStepsOfNineElements) { check_sgd(6, 9, 0.2); }

KIT_SUITES_HiddenPart15Decentral(KIT_HIDDEN_DECENTRAL_CASES)  // one suite per run of kit/part_table.py
