// thrown.h: what a call's refusal says, for the tests that check a message.
#pragma once

#include <functional>
#include <stdexcept>
#include <string>

namespace kit {

// The message of the Error that `call` throws, or "" if it throws none
// (any other exception passes through and fails the test).
template <typename Error = std::logic_error>
std::string what_thrown(const std::function<void()>& call) {
  try {
    call();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace kit
