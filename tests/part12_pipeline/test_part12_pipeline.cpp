// Part 12 (an extension part): pipeline_step under GPipe and 1F1B, on each
// stage count of its runs (kit/part_table.py; one suite per stage count), with 1,
// 3 and 8 micro-batches (the checks: pipeline_checks.h).
//   make test-part12
#include "pipeline_checks.h"
#include "kit_facts.h"  // KIT_SUITES_Part12Pipeline

using namespace kit;

// The same cases for each stage count; kit/part_table.py runs suite Part12PipelineK on K ranks.
#define KIT_PIPELINE_CASES(Suite)                                           \
  TEST(Suite, GPipeOneMicroBatch) { check_step(Schedule::GPipe, 1); }      \
  TEST(Suite, GPipeThreeMicroBatches) { check_step(Schedule::GPipe, 3); }  \
  TEST(Suite, GPipeEightMicroBatches) { check_step(Schedule::GPipe, 8); }  \
  TEST(Suite, OneFOneBOneMicroBatch) { check_step(Schedule::OneFOneB, 1); }      \
  TEST(Suite, OneFOneBThreeMicroBatches) { check_step(Schedule::OneFOneB, 3); }  \
  TEST(Suite, OneFOneBEightMicroBatches) { check_step(Schedule::OneFOneB, 8); }

KIT_SUITES_Part12Pipeline(KIT_PIPELINE_CASES)  // one suite per run of kit/part_table.py
