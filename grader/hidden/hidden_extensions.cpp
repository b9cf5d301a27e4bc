// The grader's hidden cases of the extension parts (never shipped to
// students): other lengths than Part 11's public cases, other numbers of
// micro-batches than Part 12's (one row each, too). The checks are the
// public cases' (tests/ring_checks.h, tests/pipeline_checks.h).
//   tools/kitrun -n 4 build/reference/kit_tests --gtest_filter='HiddenPart11Ring4.*:HiddenPart12Pipeline4.*'
#include "pipeline_checks.h"
#include "ring_checks.h"

using namespace kit;

#define KIT_HIDDEN_RING_CASES(Suite)                                                       \
  TEST(Suite, NaiveOfThreeBlocksAndTwo) { check_naive(3 * world().size() + 2); }         \
  TEST(Suite, RingOfThreeBlocksAndTwo) { check_ring(3 * world().size() + 2); }           \
  TEST(Suite, RingOfAnOddLength) { check_ring(4097); }

KIT_HIDDEN_RING_CASES(HiddenPart11Ring1)
KIT_HIDDEN_RING_CASES(HiddenPart11Ring2)
KIT_HIDDEN_RING_CASES(HiddenPart11Ring3)
KIT_HIDDEN_RING_CASES(HiddenPart11Ring4)
KIT_HIDDEN_RING_CASES(HiddenPart11Ring8)

#define KIT_HIDDEN_PIPELINE_CASES(Suite)                                                   \
  TEST(Suite, GPipeTwoMicroBatches) { check_step(Schedule::GPipe, 2); }                  \
  TEST(Suite, GPipeFiveMicroBatches) { check_step(Schedule::GPipe, 5); }                 \
  TEST(Suite, OneFOneBTwoMicroBatches) { check_step(Schedule::OneFOneB, 2); }            \
  TEST(Suite, OneFOneBFiveMicroBatches) { check_step(Schedule::OneFOneB, 5); }           \
  TEST(Suite, OneFOneBOneRowEach) { check_step(Schedule::OneFOneB, kBatch); }

KIT_HIDDEN_PIPELINE_CASES(HiddenPart12Pipeline1)
KIT_HIDDEN_PIPELINE_CASES(HiddenPart12Pipeline2)
KIT_HIDDEN_PIPELINE_CASES(HiddenPart12Pipeline4)
