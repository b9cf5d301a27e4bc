// What the hidden cases of parts 1-9 share (grader/hidden/partN/): the
// groups they run on and their inputs, salted (kit_test.h's salted(): the
// course's secret salt makes the values, so no file here holds a secret).
#pragma once

#include "kit_test.h"

namespace kit::hidden {

inline Matrix row(const Vector& v) { return v.transpose(); }
inline Matrix row(const Labels& v) { return v.cast<double>().transpose(); }

// mp groups of `mp` neighbouring ranks, as get_info would make them.
inline Communicator mp_group(int mp) { return world().split(rank() / mp, rank() % mp); }
// Groups of `size` consecutive ranks; the last may be smaller.
inline Communicator blocks_of(int size) { return world().split(rank() / size, rank() % size); }

// Rank r's (rows, cols) block: distinct, non-integer values.
inline Matrix block_of(int r, int rows, int cols) {
  return salted((arange(rows, cols, 1000.0 * r).array() * 0.5 + 0.25).matrix());
}

// The ZeRO layer of parts 8 and 9. Functions, not constants: the rank's MPI
// side salts them, once a case runs.
inline Matrix zero_w() { return salted(arange(7, 5, 1) / 10.0); }  // 35 weights: padded for 2, 3 and 8 ranks
inline Matrix zero_b() { return salted(arange(1, 5, -2)); }        // 5 biases

}  // namespace kit::hidden
