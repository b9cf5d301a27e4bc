// results_seal.h: sealed records, so that a passing result can only come from
// the test harness, never from the code under test.
//
// A sealed record is the JSON object with one more member, "mac": the
// HMAC-SHA-256 (hex) of the unsealed record under a per-job key that only
// rank 0's harness holds. kit/records.py trusts a plan or a pass only if
// its seal verifies, so code under test that prints a forged record changes nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace harness {

// `record` with ",\"mac\":\"...\"" added before its closing brace; unchanged
// when the job was started without a key (a run by hand).
std::string seal_record(const std::string& record);

// Exposed for the known-answer test (tests/test_results_seal.cpp).
std::string hmac_sha256_hex(const uint8_t* key, size_t key_len, const std::string& message);

}  // namespace harness
