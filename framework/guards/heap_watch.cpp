// heap_watch.cpp: see heap_watch.h. The noted blocks live in a fixed table
// (open addressing), since code called from malloc must not call malloc.
#include "heap_watch.h"

#include <atomic>
#include <stdexcept>

#include "call_context.h"

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

std::atomic<std::int64_t> g_budget{0};
// The first refusal since the last take: written once (g_refused claims it), read after.
std::atomic<bool> g_refused{false};
std::atomic<std::int64_t> g_refused_held{0}, g_refused_asked{0};
std::atomic<const char*> g_refused_function{""};
std::atomic<bool> g_refused_by_system{false};
std::atomic<const char*> g_refused_rule{nullptr};
std::atomic<bool> g_everywhere{false};

constexpr std::int64_t kRounding = 4096 + 64;

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

namespace {

// Keeps the first refusal since the last take(); allocates nothing.
void keep_refusal(std::size_t bytes, std::int64_t live, const char* function, bool by_system,
                  const char* rule = nullptr) {
  bool first = false;
  if (g_refused.compare_exchange_strong(first, true)) {
    g_refused_held.store(live);
    g_refused_asked.store(static_cast<std::int64_t>(bytes));
    g_refused_function.store(function);
    g_refused_by_system.store(by_system);
    g_refused_rule.store(rule);
  }
}

}  // namespace

bool admit(std::size_t bytes, std::int64_t live) {
  const std::int64_t budget = g_budget.load(std::memory_order_relaxed);
  if (budget <= 0 || live + static_cast<std::int64_t>(bytes) <= budget) return true;
  const char* function = ledger::function_now_signal_safe();
  if (function == nullptr) {
    if (!g_everywhere.load(std::memory_order_relaxed)) return true;  // the kit's own code: sized into the budget
    function = "(after the last case)";
  }
  keep_refusal(bytes, live, function, false);
  return false;
}

void refused_by_system(std::size_t bytes, std::int64_t live) {
  if (const char* function = ledger::function_now_signal_safe()) keep_refusal(bytes, live, function, true);
}

void refused_by_filter(std::size_t bytes, const char* rule) {
  if (const char* function = ledger::function_now_signal_safe()) keep_refusal(bytes, 0, function, true, rule);
}

}  // namespace heap_hooks

namespace heap_budget {

void set(std::int64_t bytes) { g_budget.store(bytes); }
void hold_everywhere() { g_everywhere.store(true); }
std::int64_t bytes() { return g_budget.load(); }

Refusal peek() {
  Refusal r;
  r.happened = g_refused.load();
  if (r.happened) {
    r.held = g_refused_held.load();
    r.asked = g_refused_asked.load();
    r.function = g_refused_function.load();
    r.by_system = g_refused_by_system.load();
    r.rule = g_refused_rule.load();
  }
  return r;
}

Refusal take() {
  const Refusal r = peek();
  g_refused.store(false);
  return r;
}

void keep(const Refusal& r) {
  if (r.happened) heap_hooks::keep_refusal(static_cast<std::size_t>(r.asked), r.held, r.function, r.by_system, r.rule);
}

}  // namespace heap_budget

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

HeapWatch::Kept HeapWatch::kept(const Allowed* allowed, std::size_t n) const {
  Kept kept;
  kept.complete = !g_overflow.load();
  Locked lock;
  for (const Slot& s : g_slots) {
    if (s.p == nullptr || s.p == kTombstone) continue;
    const auto size = static_cast<std::int64_t>(s.bytes);
    // One block can sit under two roles only by a forged pointer: the larger
    // role is taken, which still leaves no room for a full weight.
    const Allowed* role = nullptr;
    for (std::size_t i = 0; i < n; ++i)
      if (allowed[i].at == s.p && (role == nullptr || allowed[i].bytes > role->bytes)) role = &allowed[i];
    // The tracker records a block's usable size, which malloc rounds up (a
    // mapped block to a page): up to that much past its role is no excess.
    const std::int64_t beyond = role == nullptr ? size : size - role->bytes;
    if (beyond <= (role == nullptr ? 0 : kRounding)) continue;
    kept.bytes += beyond;
    ++kept.blocks;
    if (role != nullptr && kept.oversized_role == nullptr) {
      kept.oversized_role = role->role;
      kept.oversized_bytes = size;
      kept.oversized_allowed = role->bytes;
    }
  }
  return kept;
}

LibraryAllocations::LibraryAllocations() { ++t_library_depth; }
LibraryAllocations::~LibraryAllocations() { --t_library_depth; }

}  // namespace dtrain
