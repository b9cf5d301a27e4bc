// The kit's memory budget: one figure for every machine (kit/parts.py,
// RANK_HEAP_BUDGET_MIB; framework/heap_watch.h, heap_budget).
//   tools/kitrun -n 1 build/reference/kit_tests --gtest_filter='KitMemoryBudget*'
// Inside a student function, a block that would take the rank's heap past the
// budget is refused (malloc's null, new's std::bad_alloc) and the refusal is
// kept for the case's message; the kit's own code is never refused.
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include "abort_records.h"
#include "comm_runtime.h"
#include "heap_watch.h"
#include "harness.h"  // the table of runs and the budget (kit/parts.py)
#include "kit_test.h"

TEST(KitMemoryBudget, RefusesABlockPastTheBudgetInsideAStudentFunction) {
  const long long budget = dtrain::heap_budget::bytes();
  ASSERT_EQ(budget, harness::kRankHeapBudgetBytes) << "the test binary runs with the parts table's budget";
  {
    dtrain::StudentScope scope("get_info");
    EXPECT_THROW(std::vector<char>(static_cast<size_t>(budget) + 1), std::bad_alloc);
    void* refused = std::malloc(static_cast<size_t>(budget));
    EXPECT_EQ(refused, nullptr) << "malloc gave a block of the whole budget on top of the rank's heap";
    void* small = std::malloc(1 << 20);  // well within: still given
    EXPECT_NE(small, nullptr);
    std::free(small);
  }
  const dtrain::heap_budget::Refusal refusal = dtrain::heap_budget::take();
  ASSERT_TRUE(refusal.happened);
  EXPECT_STREQ(refusal.function, "get_info");
  EXPECT_EQ(refusal.asked, budget + 1) << "the first refusal is the one kept";
  EXPECT_GT(refusal.held, 0);
  char text[400];
  harness::budget_refusal_text(text, sizeof text, refusal);
  EXPECT_EQ(std::string(text).rfind("over its memory budget: get_info asked for a block of ", 0), 0u) << text;
  EXPECT_NE(std::string(text).find("a rank may hold " + std::to_string(budget >> 20) + ".0 MiB"), std::string::npos)
      << text;
  EXPECT_FALSE(dtrain::heap_budget::take().happened) << "taking the refusal forgets it";
}

TEST(KitMemoryBudget, NeverRefusesTheKitsOwnCode) {
  const size_t past = static_cast<size_t>(dtrain::heap_budget::bytes()) + (1 << 20);
  void* block = std::malloc(past);  // no student function runs: the kit's data, sized into the budget
  EXPECT_NE(block, nullptr);
  std::free(block);
  EXPECT_FALSE(dtrain::heap_budget::take().happened);
}
