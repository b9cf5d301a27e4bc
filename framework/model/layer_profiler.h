// layer_profiler.h: per-layer peak heap memory of forward and backward.
//
// The trainers link the heap tracker (memory_tracker.cpp), which counts every
// live malloc'd byte of the process. A layer's figure is the highest the heap
// rose above its level at the start of that layer's call: the activations,
// gathered weights and gradients the call allocated, whether or not it kept them.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace dtrain {

// Live and peak bytes of the process heap, as the malloc tracker counts them
// (memory_tracker.cpp; the ZeRO memory rule watches blocks instead: heap_watch.h).
std::int64_t tracked_heap_bytes();
std::int64_t heap_peak_bytes();
void heap_reset_peak();  // peak := live
// A second peak that heap_reset_peak leaves alone, for a whole run's figure
// while LayerProfiler resets the first around every call.
std::int64_t heap_high_water();
void heap_reset_high_water();  // high water := live

// Lets glibc serve big blocks (up to 32 MiB) from the heap and keep freed
// memory for reuse: where its own tuning takes a process once it has freed a
// few big blocks. Set at the start of the trainers and the test main, since
// from a cold start every big allocation of an iteration (gathered weights,
// gradients) page-faults anew, which makes the first epoch several times slower.
void keep_big_blocks_for_reuse();

class LayerProfiler {
 public:
  // Bracket one call, e.g. begin("fc1", Phase::Forward) ... end().
  enum class Phase { Forward, Backward };
  void begin(const std::string& layer, Phase phase);
  void end();

  struct Peaks {
    std::int64_t forward = 0, backward = 0;
  };
  const std::vector<std::pair<std::string, Peaks>>& peaks() const { return order_; }

 private:
  std::vector<std::pair<std::string, Peaks>> order_;  // layers in first-seen order
  std::string layer_;
  Phase phase_ = Phase::Forward;
  std::int64_t base_ = 0;
  bool open_ = false;
};

// RAII bracket that does nothing when the profiler is null.
class ProfileScope {
 public:
  ProfileScope(LayerProfiler* profiler, const std::string& layer, LayerProfiler::Phase phase)
      : profiler_(profiler) {
    if (profiler_) profiler_->begin(layer, phase);
  }
  ~ProfileScope() {
    if (profiler_) profiler_->end();
  }
  ProfileScope(const ProfileScope&) = delete;
  ProfileScope& operator=(const ProfileScope&) = delete;

 private:
  LayerProfiler* profiler_;
};

}  // namespace dtrain
