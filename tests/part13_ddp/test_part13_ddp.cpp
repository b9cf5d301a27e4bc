// Part 13 (an extension part): plan_buckets on 1 rank, and GradientBuckets
// on each rank count of its runs (kit/part_table.py; one suite per rank count),
// each played through two backwards (the checks: ddp_checks.h).
//   make test-part13
#include "ddp_checks.h"
#include "kit_facts.h"  // KIT_SUITES_Part13Ddp

using namespace kit;

// Six parameters, as a two-layer model's W1 b1 W2 b2 W3 b3 would be, smaller.
static const std::vector<long> kSizes{6, 2, 4, 2, 3, 1};

TEST(Part13Ddp1, PlanOfOneBucket) { check_plan(kSizes, 100, {{5, 4, 3, 2, 1, 0}}); }
TEST(Part13Ddp1, PlanOfOneBucketPerParameter) { check_plan(kSizes, 0, {{5}, {4}, {3}, {2}, {1}, {0}}); }
// 1 + 3 + 2 and 4 + 2 fill the cap exactly: a bucket closes only past it.
TEST(Part13Ddp1, PlanOfBucketsFilledToTheCap) { check_plan(kSizes, 6, {{5, 4, 3}, {2, 1}, {0}}); }
// With a cap of 8 the walk's direction shows: from the last parameter 1 + 3
// + 2 and 4 + 2, from the first 6 + 2, 4 + 2 and 3 + 1 ({0, 1}{2, 3}{4, 5}).
TEST(Part13Ddp1, PlanWalkedFromTheLastParameter) { check_plan(kSizes, 8, {{5, 4, 3}, {2, 1}, {0}}); }
TEST(Part13Ddp1, PlanWithParametersLargerThanTheCap) {
  check_plan({100, 3, 2, 50, 1}, 10, {{4}, {3}, {2, 1}, {0}});
}
// The trainer's model with two hidden layers of 256, and buckets of 512 KiB:
// the small last layer shares the first bucket, which starts early.
TEST(Part13Ddp1, PlanOfTheTrainersModel) {
  check_plan({784 * 256, 256, 256 * 256, 256, 256 * 10, 10}, 65536, {{5, 4, 3}, {2}, {1}, {0}});
}

// The same GradientBuckets cases for each rank count; kit/part_table.py runs suite Part13DdpN on N ranks.
#define KIT_DDP_CASES(Suite)                                                                             \
  TEST(Suite, BucketsFilledToTheCap) { check_buckets(kSizes, 6, {{5, 4, 3}, {2, 1}, {0}}); }             \
  TEST(Suite, BucketsWalkedFromTheLastParameter) { check_buckets(kSizes, 8, {{5, 4, 3}, {2, 1}, {0}}); } \
  TEST(Suite, OneBucketPerParameter) { check_buckets(kSizes, 0, {{5}, {4}, {3}, {2}, {1}, {0}}); }       \
  TEST(Suite, OneBucket) { check_buckets(kSizes, 100, {{5, 4, 3, 2, 1, 0}}); }                           \
  TEST(Suite, ALargeFirstLayer) { check_buckets({160, 8, 32, 4}, 40, {{3, 2}, {1}, {0}}); }

KIT_SUITES_Part13Ddp(KIT_DDP_CASES)  // one suite per run of kit/part_table.py
