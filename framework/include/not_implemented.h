// not_implemented.h: the error every unfinished student function throws.
#pragma once

#include <stdexcept>
#include <string>

namespace dtrain {

// Thrown by a stub. The message names the function and the handout section,
// e.g. "split_data is not implemented yet (handout: Part 1)".
class NotImplemented : public std::logic_error {
 public:
  NotImplemented(const std::string& function, const std::string& handout_part)
      : std::logic_error(function + " is not implemented yet (handout: " + handout_part + ")") {}
};

}  // namespace dtrain
