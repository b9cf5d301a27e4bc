// heap_watch.h: which heap blocks a call allocated and still holds when it
// returns: the ZeRO memory rule's measure (tests/zero_test_util.h). Exact,
// unlike the process's heap total or its resident pages: blocks other code
// allocates meanwhile (another thread, MPI inside a collective, the kit's
// ledger) are not the call's, and a block the call frees is gone.
//
// It needs the malloc tracker (memory_tracker.cpp) linked into the program,
// which reports every allocation and free here.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dtrain {

// While one lives, the blocks this thread allocates outside library code are
// noted, until they are freed (by any thread). One at a time per process.
class HeapWatch {
 public:
  HeapWatch();
  ~HeapWatch();
  HeapWatch(const HeapWatch&) = delete;
  HeapWatch& operator=(const HeapWatch&) = delete;

  // Whether the program reports its allocations (the tracker is linked).
  static bool available();
  // Whether a watch lives now (there is one at a time).
  static bool busy();

  // A block that may stay when the watched calls return (a result, a member
  // the call may set), by where it begins and the size its role allows. The
  // address alone proves nothing: a Matrix's row count can be made smaller
  // than its block, and the rest of the block then holds what it likes.
  struct Allowed {
    const void* at = nullptr;  // null: no block
    std::int64_t bytes = 0;    // what the role needs (a result's rows x cols doubles, ...)
    const char* role = "";
  };
  struct Kept {
    std::int64_t bytes = 0;  // still allocated, beyond what the blocks allowed to stay may hold
    long blocks = 0;
    bool complete = true;    // false: more blocks than the watch can hold were live at once
    // The first allowed block bigger than its role (its size as the tracker
    // recorded it at allocation), if any: what the message names.
    const char* oversized_role = nullptr;
    std::int64_t oversized_bytes = 0, oversized_allowed = 0;
  };
  // What the calls made while this watch lived still hold now. A block that
  // begins at one of allowed[0..n) counts only by what it holds past its
  // role's size; any other block counts whole. An array, not a container:
  // building one would allocate.
  Kept kept(const Allowed* allowed, std::size_t n) const;
};

// Brackets code that allocates on its own behalf, not on its caller's (the
// communicator's collectives: MPI's buffers, the ledger's records).
class LibraryAllocations {
 public:
  LibraryAllocations();
  ~LibraryAllocations();
  LibraryAllocations(const LibraryAllocations&) = delete;
  LibraryAllocations& operator=(const LibraryAllocations&) = delete;
};

// The rank's memory budget: one figure for every machine the kit grades on,
// so a handin's grade never depends on how much memory the grading machine
// has (tests/harness/mpi_test_main.cpp sets it from the parts table). While a
// student function runs, an allocation that would take the process's live
// heap past the budget is refused: malloc returns null and `new` throws
// std::bad_alloc. The first refusal is kept for the case's message. The
// kit's own code, outside student functions, is never refused. Beside the
// budget, the process has a limit on all its private memory (RLIMIT_DATA:
// heap, mappings, thread stacks; platform::limit_private_memory): a block
// the system refuses under it, in a student function, is kept the same way.
namespace heap_budget {
void set(std::int64_t bytes);  // 0: no budget (the trainers)
// From now on the budget holds for every allocation, the kit's own code's
// too: after the last case, where only exit's work is left (a student's
// static destructor or a thread left running would be outside any function).
void hold_everywhere();
std::int64_t bytes();
struct Refusal {
  bool happened = false;
  std::int64_t held = 0;       // the live heap when it was refused
  std::int64_t asked = 0;      // the size of the refused block
  const char* function = "";  // the student function running then
  bool by_system = false;      // refused by the system (the data limit), not by the budget
  const char* rule = nullptr;  // refused by the system-call filter: the kind of memory it refuses
};
// The first refusal since the last call, which forgets it.
Refusal take();
// Keeps `r` as if refused here, unless one is kept already: the driven
// harness's copy of a refusal in the student's process (driven_harness.cpp).
void keep(const Refusal& r);
// The same, without forgetting it; for a signal handler (no allocation).
Refusal peek();
}  // namespace heap_budget

namespace heap_hooks {
// Called by the malloc tracker for every block; cheap unless a watch is open.
void allocated(void* p, std::size_t bytes);
void freed(void* p);
void tracker_linked();
// Called by the malloc tracker before it allocates `bytes` more on top of
// `live`: false refuses the block (heap_budget). Allocates nothing.
bool admit(std::size_t bytes, std::int64_t live);
// Called by the malloc tracker when glibc gave no block of `bytes` that the
// budget had admitted: the system refused it.
void refused_by_system(std::size_t bytes, std::int64_t live);
// Called from the system-call filter's SIGSYS handler (syscall_filter.cpp)
// when it refused `bytes` of a kind of memory the data limit would not count,
// `rule` (a string literal) saying which. Signal-safe.
void refused_by_filter(std::size_t bytes, const char* rule);
}  // namespace heap_hooks

}  // namespace dtrain
