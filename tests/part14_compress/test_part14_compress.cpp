// Part 14 (an extension part): topk, compress_with_feedback and
// sparse_allreduce_mean, on each rank count of its runs (kit/part_table.py; one
// suite per rank count). The checks: compress_checks.h.
//   make test-part14
#include "compress_checks.h"
#include "kit_facts.h"  // KIT_SUITES_Part14Compress

using namespace kit;

// The same cases for each rank count; kit/part_table.py runs suite Part14CompressN on N ranks.
#define KIT_COMPRESS_CASES(Suite)                                                                          \
  TEST(Suite, TopkBreaksTiesTowardTheLowerIndex) {                                                      \
    check_topk(tied(world().rank(), 20), 4, "a tied vector");                                             \
    check_topk(tied(world().rank(), 20), 9, "a tied vector");                                             \
  }                                                                                                      \
  TEST(Suite, TopkKeepsZerosWhenFewerAreNonZero) {                                                       \
    check_topk(mostly_zero(world().rank(), 10), 4, "a vector of two non-zeros");                          \
    check_topk(mostly_zero(world().rank(), 10), 3, "a vector of two non-zeros");                          \
  }                                                                                                      \
  TEST(Suite, TopkWithKAtLeastNOrAtMostZero) {                                                           \
    check_topk(spread(world().rank(), 7), 9, "a vector of 7");                                            \
    check_topk(spread(world().rank(), 7), 0, "a vector of 7");                                            \
    check_topk(spread(world().rank(), 7), -2, "a vector of 7");                                           \
  }                                                                                                      \
  TEST(Suite, FeedbackCarriesTheResidualOverFourSteps) { check_feedback(4, 12, 3); }                    \
  TEST(Suite, FeedbackRefusesAGradientOfAnotherLength) { check_feedback_refuses_another_length(); }     \
  TEST(Suite, SparseMeanOfOverlappingIndices) { check_sparse_mean(20, 4); }                             \
  TEST(Suite, SparseMeanWithKZero) { check_sparse_mean(9, 0); }

KIT_SUITES_Part14Compress(KIT_COMPRESS_CASES)  // one suite per run of kit/part_table.py
