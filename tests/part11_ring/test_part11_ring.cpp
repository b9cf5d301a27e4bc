// Part 11 (an extension part): naive_allreduce and ring_allreduce, on 1, 2,
// 3, 4 and 8 ranks (one suite per rank count), for lengths below, equal to
// and not a multiple of the rank count (the checks: ring_checks.h).
//   make test-part11
#include "ring_checks.h"

using namespace kit;

// The same cases for each rank count; kit/parts.py runs suite Part11RingN on N ranks.
#define KIT_RING_CASES(Suite)                                                                 \
  TEST(Suite, NaiveShorterThanTheRanks) { check_naive(world().size() - 1); }                 \
  TEST(Suite, NaiveAsLongAsTheRanks) { check_naive(world().size()); }                        \
  TEST(Suite, NaiveNotAMultipleOfTheRanks) { check_naive(2 * world().size() + 1); }          \
  TEST(Suite, RingShorterThanTheRanks) { check_ring(world().size() - 1); }                   \
  TEST(Suite, RingAsLongAsTheRanks) { check_ring(world().size()); }                          \
  TEST(Suite, RingNotAMultipleOfTheRanks) { check_ring(2 * world().size() + 1); }            \
  TEST(Suite, RingOfAThousandElements) { check_ring(1000); }

KIT_RING_CASES(Part11Ring1)
KIT_RING_CASES(Part11Ring2)
KIT_RING_CASES(Part11Ring3)
KIT_RING_CASES(Part11Ring4)
KIT_RING_CASES(Part11Ring8)
