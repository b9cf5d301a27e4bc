// heap_probe.cpp: see heap_probe.h.
#include "heap_probe.h"

#include <malloc.h>
#include <unistd.h>

#include <cstdio>

#include "layer_profiler.h"

namespace kit {

std::int64_t mallinfo_heap_bytes() {
  const struct mallinfo2 info = mallinfo2();
  return static_cast<std::int64_t>(info.uordblks + info.hblkhd);
}

std::int64_t resident_bytes() {
#ifdef __linux__
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  long size = 0, resident = 0;
  const int got = std::fscanf(f, "%ld %ld", &size, &resident);
  std::fclose(f);
  return got == 2 ? static_cast<std::int64_t>(resident) * sysconf(_SC_PAGESIZE) : 0;
#else
  return 0;
#endif
}

BigBlocksToSystem::BigBlocksToSystem() {
  mallopt(M_MMAP_THRESHOLD, 64 * 1024);
  mallopt(M_TRIM_THRESHOLD, 128 * 1024);
}

// Back to the kit's usual setting (layer_profiler.h).
BigBlocksToSystem::~BigBlocksToSystem() { dtrain::keep_big_blocks_for_reuse(); }

}  // namespace kit
