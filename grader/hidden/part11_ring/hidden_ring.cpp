// The grader's hidden cases of Part 11 (never shipped to students): other
// lengths than the public cases'. The checks are the public cases'
// (tests/part11_ring/ring_checks.h).
//   tools/kitrun -n 4 build/reference/kit_tests --gtest_filter='HiddenPart11Ring4.*'
#include "part11_ring/ring_checks.h"
#include "kit_facts.h"  // KIT_SUITES_HiddenPart11Ring

using namespace kit;

#define KIT_HIDDEN_RING_CASES(Suite)                                                       \
  TEST(Suite, NaiveOfThreeBlocksAndTwo) { check_naive(3 * world().size() + 2); }         \
  TEST(Suite, RingOfThreeBlocksAndTwo) { check_ring(3 * world().size() + 2); }           \
  TEST(Suite, RingOfAnOddLength) { check_ring(4097); }

KIT_SUITES_HiddenPart11Ring(KIT_HIDDEN_RING_CASES)  // one suite per run of kit/part_table.py
