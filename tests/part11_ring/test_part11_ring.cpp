// Part 11 (an extension part): naive_allreduce and ring_allreduce, on each
// rank count of its runs (kit/part_table.py; one suite per rank count), for
// lengths below, equal to and not a multiple of the rank count (the checks: ring_checks.h).
//   make test-part11
#include "ring_checks.h"
#include "kit_facts.h"  // KIT_SUITES_Part11Ring

using namespace kit;

// The same cases for each rank count; kit/part_table.py runs suite Part11RingN on N ranks.
#define KIT_RING_CASES(Suite)                                                                 \
  TEST(Suite, NaiveShorterThanTheRanks) { check_naive(world().size() - 1); }                 \
  TEST(Suite, NaiveAsLongAsTheRanks) { check_naive(world().size()); }                        \
  TEST(Suite, NaiveNotAMultipleOfTheRanks) { check_naive(2 * world().size() + 1); }          \
  TEST(Suite, RingShorterThanTheRanks) { check_ring(world().size() - 1); }                   \
  TEST(Suite, RingAsLongAsTheRanks) { check_ring(world().size()); }                          \
  TEST(Suite, RingNotAMultipleOfTheRanks) { check_ring(2 * world().size() + 1); }            \
  TEST(Suite, RingOfAThousandElements) { check_ring(1000); }

KIT_SUITES_Part11Ring(KIT_RING_CASES)  // one suite per run of kit/part_table.py
