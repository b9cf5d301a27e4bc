// memory_tracker.cpp: counts the process's live heap bytes by standing in
// front of glibc's malloc family, and reports each block to heap_watch.h.
// Linked into the training programs, whose per-layer memory report
// (layer_profiler.h) reads the counters, and into the test binary, whose
// ZeRO memory rule watches the blocks. Eigen allocates with malloc, so every
// Matrix is seen.
#include <malloc.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "heap_watch.h"
#include "layer_profiler.h"

extern "C" {
void* __libc_malloc(size_t);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void* __libc_memalign(size_t, size_t);
void __libc_free(void*);
}

namespace {

std::atomic<std::int64_t> g_live{0};
std::atomic<std::int64_t> g_peak{0};
std::atomic<std::int64_t> g_high_water{0};

void raise_to(std::atomic<std::int64_t>& mark, std::int64_t value) {
  std::int64_t seen = mark.load(std::memory_order_relaxed);
  while (value > seen && !mark.compare_exchange_weak(seen, value)) {
  }
}

// `asked`: the size glibc was asked for; a null for a real size is the
// system's refusal (the process's data limit), kept for the case's message.
void note_alloc(void* p, size_t asked) {
  if (!p) {
    if (asked != 0) dtrain::heap_hooks::refused_by_system(asked, g_live.load(std::memory_order_relaxed));
    return;
  }
  const std::int64_t size = static_cast<std::int64_t>(malloc_usable_size(p));
  dtrain::heap_hooks::allocated(p, static_cast<size_t>(size));
  const std::int64_t now = g_live.fetch_add(size) + size;
  raise_to(g_peak, now);
  raise_to(g_high_water, now);
}

// The rank's memory budget (heap_watch.h, heap_budget) may refuse a block
// before glibc is asked for it.
bool refused(size_t n, std::int64_t live) {
  if (dtrain::heap_hooks::admit(n, live)) return false;
  errno = ENOMEM;
  return true;
}

void note_free(void* p) {
  if (!p) return;
  dtrain::heap_hooks::freed(p);
  g_live.fetch_sub(static_cast<std::int64_t>(malloc_usable_size(p)));
}

// Tells heap_watch.h that this program reports its blocks.
const bool g_reported = (dtrain::heap_hooks::tracker_linked(), true);

}  // namespace

extern "C" {

void* malloc(size_t n) {
  if (refused(n, g_live.load(std::memory_order_relaxed))) return nullptr;
  void* p = __libc_malloc(n);
  note_alloc(p, n);
  return p;
}

void* calloc(size_t count, size_t n) {
  size_t total = 0;
  const bool overflows = __builtin_mul_overflow(count, n, &total);
  if (!overflows && refused(total, g_live.load(std::memory_order_relaxed))) return nullptr;
  void* p = __libc_calloc(count, n);
  note_alloc(p, overflows ? 0 : total);  // an impossible size is no refusal of the system's
  return p;
}

void* realloc(void* old, size_t n) {
  const std::int64_t old_size = old ? static_cast<std::int64_t>(malloc_usable_size(old)) : 0;
  if (n > static_cast<size_t>(old_size) && refused(n, g_live.load(std::memory_order_relaxed) - old_size))
    return nullptr;  // the old block stays live, as realloc's failure promises
  note_free(old);
  void* p = __libc_realloc(old, n);
  if (p) {
    note_alloc(p, n);
  } else if (old && n != 0) {
    note_alloc(old, n);  // the old block is still live
    dtrain::heap_hooks::refused_by_system(n, g_live.load(std::memory_order_relaxed));
  } else {
    note_alloc(p, n);
  }
  return p;
}

void free(void* p) {
  note_free(p);
  __libc_free(p);
}

void* memalign(size_t alignment, size_t n) {
  // glibc finds an aligned block inside one of n + alignment bytes and may
  // keep all of it (a mapped block keeps everything past its lead), so a
  // block is admitted by that size: aligned_alloc(1 GiB, 64) is a 1 GiB ask.
  size_t worst = 0;
  if (__builtin_add_overflow(n, alignment, &worst)) worst = SIZE_MAX;
  if (refused(worst, g_live.load(std::memory_order_relaxed))) return nullptr;
  void* p = __libc_memalign(alignment, n);
  note_alloc(p, n);
  return p;
}

void* aligned_alloc(size_t alignment, size_t n) { return memalign(alignment, n); }

int posix_memalign(void** out, size_t alignment, size_t n) {
  if (alignment % sizeof(void*) != 0 || (alignment & (alignment - 1)) != 0) return EINVAL;
  void* p = memalign(alignment, n);
  if (!p && n != 0) return ENOMEM;
  *out = p;
  return 0;
}

}  // extern "C"

namespace dtrain {

std::int64_t tracked_heap_bytes() { return g_live.load(); }
std::int64_t heap_peak_bytes() { return g_peak.load(); }
void heap_reset_peak() { g_peak.store(g_live.load()); }
std::int64_t heap_high_water() { return g_high_water.load(); }
void heap_reset_high_water() { g_high_water.store(g_live.load()); }

}  // namespace dtrain
