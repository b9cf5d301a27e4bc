// recorded.h: values the grader's hidden cases hand to the judge. A case
// names each value; the judge (kit/judge.py, outside the test process)
// compares the value of rank r with the one recorded from the reference
// under "<case>/recorded.<label>#1" for rank r (grader/hidden/KEY/expected.txt,
// written by `make hidden-data`). Nothing in the test process knows the
// expected value, so nothing there can pass the check.
//
//   EXPECT_RECORDED("grad_w_shard", Matrix(layer.grad_w_shard.transpose()));
#pragma once

#include <string>

#include "kit_test.h"
#include "observe.h"

#define EXPECT_RECORDED(label, actual) ::dtrain::observe(std::string("recorded.") + (label), ::kit::Matrix(actual))
