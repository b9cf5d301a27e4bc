// heap_watch.cpp: see heap_watch.h. The noted blocks live in a fixed table
// (open addressing), since code called from malloc must not call malloc.
#include "heap_watch.h"

#include <atomic>
#include <stdexcept>

namespace dtrain {

namespace {

constexpr std::size_t kSlots = 1 << 16;  // blocks live at once; a layer call holds a few dozen
struct Slot {
  void* p;
  std::size_t bytes;
};
void* const kTombstone = reinterpret_cast<void*>(1);
Slot g_slots[kSlots];
std::atomic_flag g_lock = ATOMIC_FLAG_INIT;
std::atomic<bool> g_open{false}, g_linked{false}, g_overflow{false};
std::atomic<const void*> g_watcher{nullptr};  // the watching thread's marker
thread_local int t_library_depth = 0;
thread_local char t_marker;  // its address tells threads apart

class Locked {
 public:
  Locked() {
    while (g_lock.test_and_set(std::memory_order_acquire)) {
    }
  }
  ~Locked() { g_lock.clear(std::memory_order_release); }
};

std::size_t slot_of(const void* p) { return (reinterpret_cast<std::uintptr_t>(p) >> 4) * 0x9E3779B97F4A7C15ull % kSlots; }

}  // namespace

namespace heap_hooks {

void allocated(void* p, std::size_t bytes) {
  if (!g_open.load(std::memory_order_relaxed) || p == nullptr || t_library_depth > 0 ||
      g_watcher.load(std::memory_order_relaxed) != &t_marker)
    return;
  Locked lock;
  for (std::size_t i = slot_of(p), n = 0; n < kSlots; i = (i + 1) % kSlots, ++n) {
    if (g_slots[i].p == nullptr || g_slots[i].p == kTombstone) {
      g_slots[i] = {p, bytes};
      return;
    }
  }
  g_overflow.store(true);
}

void freed(void* p) {
  if (!g_open.load(std::memory_order_relaxed) || p == nullptr) return;
  Locked lock;
  for (std::size_t i = slot_of(p), n = 0; n < kSlots && g_slots[i].p != nullptr; i = (i + 1) % kSlots, ++n) {
    if (g_slots[i].p == p) {
      g_slots[i].p = kTombstone;
      return;
    }
  }
}

void tracker_linked() { g_linked.store(true); }

}  // namespace heap_hooks

HeapWatch::HeapWatch() {
  if (g_open.exchange(true)) throw std::logic_error("HeapWatch: one watch at a time");
  Locked lock;
  for (Slot& s : g_slots) s = {nullptr, 0};
  g_overflow.store(false);
  g_watcher.store(&t_marker);
}

HeapWatch::~HeapWatch() {
  g_watcher.store(nullptr);
  g_open.store(false);
}

bool HeapWatch::available() { return g_linked.load(); }
bool HeapWatch::busy() { return g_open.load(); }

HeapWatch::Kept HeapWatch::kept(const void* const* allowed, std::size_t n) const {
  Kept kept;
  kept.complete = !g_overflow.load();
  Locked lock;
  for (const Slot& s : g_slots) {
    if (s.p == nullptr || s.p == kTombstone) continue;
    bool may_stay = false;
    for (std::size_t i = 0; i < n; ++i) may_stay = may_stay || allowed[i] == s.p;
    if (may_stay) continue;
    kept.bytes += static_cast<std::int64_t>(s.bytes);
    ++kept.blocks;
  }
  return kept;
}

LibraryAllocations::LibraryAllocations() { ++t_library_depth; }
LibraryAllocations::~LibraryAllocations() { --t_library_depth; }

}  // namespace dtrain
