// heap_probe.h: how much memory the process holds right now, for the ZeRO
// memory rule (a layer may hold its full weight only inside a call).
#pragma once

#include <cstdint>

namespace kit {

// Bytes of malloc'd blocks in use, over every arena (glibc mallinfo2).
std::int64_t mallinfo_heap_bytes();
// Resident bytes of the process (Linux /proc/self/statm; 0 elsewhere). Also
// sees memory that never went through malloc, such as a static array.
std::int64_t resident_bytes();
// While one lives, every block of 64 KiB or more is its own mapping,
// returned to the system on free, so resident memory falls when a big block
// is freed. Slow for everything else, so it lasts one measurement.
class BigBlocksToSystem {
 public:
  BigBlocksToSystem();
  ~BigBlocksToSystem();
  BigBlocksToSystem(const BigBlocksToSystem&) = delete;
  BigBlocksToSystem& operator=(const BigBlocksToSystem&) = delete;
};

}  // namespace kit
