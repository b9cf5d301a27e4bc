// The kit's memory budget: one figure for every machine (kit/limits.py,
// RANK_HEAP_BUDGET_MIB; framework/guards/heap_watch.h, heap_budget).
//   tools/kitrun -n 1 build/reference/kit_tests --gtest_filter='KitMemoryBudget*'
// Inside a student function, a block that would take the rank's heap past the
// budget is refused (malloc's null, new's std::bad_alloc) and the refusal is
// kept for the case's message; the kit's own code is never refused. Beside
// it, the process's data limit (RANK_DATA_LIMIT_MIB) holds memory taken
// around the heap, and the system's refusals are kept the same way.
#include <pthread.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include "abort_records.h"
#include "comm_runtime.h"
#include "heap_watch.h"
#include "harness.h"  // the table of runs and the budget (kit/part_table.py, kit/limits.py)
#include "kit_test.h"
#include "platform.h"

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

TEST(KitMemoryBudget, CountsAnAlignedBlockByItsAlignmentToo) {
  // glibc keeps up to size + alignment bytes for an aligned block, so a
  // small block with a huge alignment is a huge block.
  const size_t budget = static_cast<size_t>(dtrain::heap_budget::bytes());
  size_t huge = 1;
  while (huge <= budget) huge <<= 1;  // the first power of two past the budget
  {
    dtrain::StudentScope scope("split_data");
    EXPECT_EQ(std::aligned_alloc(huge, 64), nullptr) << "aligned_alloc(" << huge << ", 64) was given";
    void* out = nullptr;
    EXPECT_EQ(posix_memalign(&out, huge, 64), ENOMEM);
    void* fine = std::aligned_alloc(64, 1 << 20);  // an ordinary alignment: still given
    EXPECT_NE(fine, nullptr);
    std::free(fine);
  }
  const dtrain::heap_budget::Refusal refusal = dtrain::heap_budget::take();
  ASSERT_TRUE(refusal.happened);
  EXPECT_EQ(refusal.asked, static_cast<long long>(huge + 64)) << "asked: the size and the alignment";
}

TEST(KitMemoryBudget, LimitsAllPrivateMemoryNotOnlyTheHeap) {
  // A mapping of one's own goes around the heap's accounting; the process's
  // data limit (RLIMIT_DATA) holds it too, and can't be raised again.
  const long long limit = harness::kRankDataLimitBytes;
  ASSERT_EQ(dtrain::platform::private_memory_limit(), limit) << "the test program sets the parts table's limit";
  void* mapped = ::mmap(nullptr, static_cast<size_t>(limit), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  EXPECT_EQ(mapped, MAP_FAILED) << "a private mapping of the whole limit was given";
  if (mapped != MAP_FAILED) ::munmap(mapped, static_cast<size_t>(limit));
  rlimit raised{RLIM_INFINITY, RLIM_INFINITY};
  EXPECT_NE(::setrlimit(RLIMIT_DATA, &raised), 0) << "the limit was raised again";

  // A block the budget would admit (no budget here) but the system refuses
  // is kept for the case's message as the system's refusal.
  const std::int64_t budget = dtrain::heap_budget::bytes();
  dtrain::heap_budget::set(0);
  {
    dtrain::StudentScope scope("zero_dp_stage3");
    EXPECT_EQ(std::malloc(static_cast<size_t>(limit)), nullptr);
  }
  dtrain::heap_budget::set(budget);
  const dtrain::heap_budget::Refusal refusal = dtrain::heap_budget::take();
  ASSERT_TRUE(refusal.happened);
  EXPECT_TRUE(refusal.by_system);
  char text[400];
  harness::budget_refusal_text(text, sizeof text, refusal);
  EXPECT_EQ(std::string(text).rfind("out of memory: zero_dp_stage3 asked for a block of ", 0), 0u) << text;
  EXPECT_NE(std::string(text).find("may reach " + std::to_string(limit >> 20) + ".0 MiB"), std::string::npos) << text;
}

TEST(KitMemoryBudget, BoundsTheStacksTheDataLimitDoesNotCountOrCountsWhole) {
  // The main thread's stack is the one private memory the data limit does
  // not count: its own limit holds it, and can't be raised again. Every
  // other thread's stack is data at its full size, so it is kept small.
  rlimit stack{};
  ASSERT_EQ(::getrlimit(RLIMIT_STACK, &stack), 0);
  EXPECT_LE(stack.rlim_max, static_cast<rlim_t>(harness::kRankStackLimitBytes)) << "the main stack's limit";
  rlimit raised{RLIM_INFINITY, RLIM_INFINITY};
  EXPECT_NE(::setrlimit(RLIMIT_STACK, &raised), 0) << "the stack limit was raised again";
  pthread_attr_t attr;
  ASSERT_EQ(::pthread_getattr_default_np(&attr), 0);
  size_t size = 0;
  ::pthread_attr_getstacksize(&attr, &size);
  ::pthread_attr_destroy(&attr);
  EXPECT_EQ(static_cast<long long>(size), harness::kThreadStackBytes) << "a new thread's stack";
}

TEST(KitMemoryBudget, NeverRefusesTheKitsOwnCode) {
  const size_t past = static_cast<size_t>(dtrain::heap_budget::bytes()) + (1 << 20);
  void* block = std::malloc(past);  // no student function runs: the kit's data, sized into the budget
  EXPECT_NE(block, nullptr);
  std::free(block);
  EXPECT_FALSE(dtrain::heap_budget::take().happened);
}
