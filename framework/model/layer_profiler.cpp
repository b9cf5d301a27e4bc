// layer_profiler.cpp: see layer_profiler.h.
#include "layer_profiler.h"

#include <algorithm>
#include <stdexcept>

#include "platform.h"

namespace dtrain {

void keep_big_blocks_for_reuse() {
  platform::tune_malloc(32L * 1024 * 1024, 64L * 1024 * 1024);
}

// Without the heap tracker (memory_tracker.cpp, linked into the trainers
// and the test binary) there is nothing to read: these stand-ins report zero, and the
// tracker's own definitions replace them where it is linked.
__attribute__((weak)) std::int64_t tracked_heap_bytes() { return 0; }
__attribute__((weak)) std::int64_t heap_peak_bytes() { return 0; }
__attribute__((weak)) void heap_reset_peak() {}
__attribute__((weak)) std::int64_t heap_high_water() { return 0; }
__attribute__((weak)) void heap_reset_high_water() {}

void LayerProfiler::begin(const std::string& layer, Phase phase) {
  if (open_) throw std::logic_error("LayerProfiler: begin(" + layer + ") inside the open call of " + layer_);
  layer_ = layer;
  phase_ = phase;
  open_ = true;
  heap_reset_peak();
  base_ = tracked_heap_bytes();
}

void LayerProfiler::end() {
  if (!open_) throw std::logic_error("LayerProfiler: end() without begin()");
  open_ = false;
  const std::int64_t rise = heap_peak_bytes() - base_;
  auto it = std::find_if(order_.begin(), order_.end(), [&](const auto& entry) { return entry.first == layer_; });
  if (it == order_.end()) it = order_.insert(order_.end(), {layer_, Peaks{}});
  std::int64_t& slot = phase_ == Phase::Forward ? it->second.forward : it->second.backward;
  slot = std::max(slot, rise);
}

}  // namespace dtrain
