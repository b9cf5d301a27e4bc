// The grader's hidden cases of Part 14 (never shipped to students): longer
// vectors, more steps and other sizes than the public cases'. The checks are
// the public cases' (tests/part14_compress/compress_checks.h).
//   tools/kitrun -n 4 build/reference/kit_tests --gtest_filter='HiddenPart14Compress4.*'
#include "part14_compress/compress_checks.h"
#include "kit_facts.h"  // KIT_SUITES_HiddenPart14Compress

using namespace kit;

#define KIT_HIDDEN_COMPRESS_CASES(Suite)                                                               \
  TEST(Suite, TopkOfTwoHundredElements) { check_topk(spread(world().rank(), 200), 17, "a vector of 200"); } \
  TEST(Suite, FeedbackOverTenSteps) { check_feedback(10, 50, 5); }                                  \
  TEST(Suite, SparseMeanOfSixtyFour) { check_sparse_mean(64, 16); }                                 \
  TEST(Suite, SparseMeanOfEveryEntry) { check_sparse_mean(11, 11); }

KIT_SUITES_HiddenPart14Compress(KIT_HIDDEN_COMPRESS_CASES)  // one suite per run of kit/parts.py
