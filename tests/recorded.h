// recorded.h: cases whose expected values were recorded from the reference
// (the grader's hidden cases). A case names each value it checks; the value
// of rank r is looked up under "<case>/<label>/r<rank>".
//
//   EXPECT_RECORDED("grad_w_shard", Matrix(layer.grad_w_shard.transpose()));
//
// With --record=PATH (staff only: `make hidden-data` on the reference) the
// harness writes the values instead of comparing them.
#pragma once

#include <string>

#include "kit_test.h"

namespace kit {

::testing::AssertionResult matches_recorded(const char* label_expr, const char* actual_expr, const std::string& label,
                                            const Matrix& actual);

// Set by the harness from --record=PATH.
void record_values_to(const std::string& path);

}  // namespace kit

#define EXPECT_RECORDED(label, actual) EXPECT_PRED_FORMAT2(::kit::matches_recorded, label, actual)
