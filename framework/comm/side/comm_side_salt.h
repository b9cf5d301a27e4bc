// comm_side_salt.h: the hidden cases' salt, which only the MPI side holds.
// A grading job's runner leaves it in the job's folder (kit/channels.py,
// offer_salt), where each rank's side takes its copy before the rank's
// program exists; the program then asks the side to salt each input
// (link Kind::Salt) and never sees the salt itself.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace dtrain::side {

// Takes this rank's copy of the job's salt from `results_dir`, if the runner
// left one there: true then. A job with a salt whose copy is gone (another
// process read it first) can't be graded: the side says so and exits.
bool take_salt(const std::string& results_dir);

// `values` salted in place: each block of values gets a scale and an
// offset of its own, keyed by the salt and by the values themselves, so the
// same input is salted alike on every rank, and what one input's salting
// shows says nothing of another's, nor of the salt. Unchanged in a job with
// no salt.
void salt_values(double* values, std::size_t count);

// SipHash-2-4 under the key (k0, k1) of `count` 8-byte words, each value's
// bits as the machine holds them (both of the kit's machines are
// little-endian): the keyed hash salt_values draws its factors from.
std::uint64_t keyed_hash(std::uint64_t k0, std::uint64_t k1, const double* words, std::size_t count);

}  // namespace dtrain::side
