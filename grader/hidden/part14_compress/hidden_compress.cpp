// The grader's hidden cases of Part 14 (never shipped to students): longer
// vectors, more steps and other sizes than the public cases', and the mean at
// make train-compress's size (the MLP's 203,530 parameters, k = 1%), so that
// code that keeps the rules only for small vectors loses. The checks are
// the public cases' (tests/part14_compress/compress_checks.h).
//   tools/kitrun -n 4 build/reference/kit_tests --gtest_filter='HiddenPart14Compress4.*'
#include "part14_compress/compress_checks.h"
#include "kit_facts.h"  // KIT_SUITES_HiddenPart14Compress

using namespace kit;

#define KIT_HIDDEN_COMPRESS_CASES(Suite)                                                               \
  TEST(Suite, TopkOfTwoHundredElements) { check_topk(spread(world().rank(), 200), 17, "a vector of 200"); } \
  TEST(Suite, FeedbackOverTenSteps) { check_feedback(10, 50, 5); }                                  \
  TEST(Suite, SparseMeanOfSixtyFour) { check_sparse_mean(64, 16); }                                 \
  TEST(Suite, SparseMeanOfEveryEntry) { check_sparse_mean(11, 11); }                               \
  TEST(Suite, SparseMeanAtTheTrainersSize) { check_sparse_mean(203530, 2035); }

KIT_SUITES_HiddenPart14Compress(KIT_HIDDEN_COMPRESS_CASES)  // one suite per run of kit/part_table.py
