// Part 15 (an extension part): gossip_mix and decentralized_sgd_step, on
// each rank count of its runs (kit/part_table.py; one suite per rank count),
// one step and several (the checks: decentral_checks.h).
//   make test-part15
#include "decentral_checks.h"
#include "kit_facts.h"  // KIT_SUITES_Part15Decentral

using namespace kit;

// The same cases for each rank count; kit/part_table.py runs suite Part15DecentralN on N ranks.
#define KIT_DECENTRAL_CASES(Suite)                                                 \
  TEST(Suite, OneGossipStepOfFiveElements) { check_gossip(1, 5); }               \
  TEST(Suite, ThreeGossipStepsOfSevenElements) { check_gossip(3, 7); }           \
  TEST(Suite, GossipOfOneElement) { check_gossip(2, 1); }                        \
  TEST(Suite, OneSgdStepMatchesTheFormula) { check_sgd(1, 6, 0.1); }             \
  TEST(Suite, FourSgdStepsMatchTheFormula) { check_sgd(4, 3, 0.05); }

KIT_SUITES_Part15Decentral(KIT_DECENTRAL_CASES)  // one suite per run of kit/part_table.py
