// function_id.h: a function's name as a number that is the same in every
// process of every rank (FNV-1a, 32 bits): the ranks compare it when they
// agree on a collective, in a test program's ledger (call_context.cpp) or
// in the MPI side (side/comm_side_agree.cpp).
#pragma once

#include <cstdint>

namespace dtrain {

inline std::int64_t function_id(const char* name) {
  std::uint32_t h = 2166136261u;
  for (const char* p = name ? name : ""; *p; ++p) h = (h ^ static_cast<unsigned char>(*p)) * 16777619u;
  return h;
}

}  // namespace dtrain
