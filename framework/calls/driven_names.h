// driven_names.h: the names the harness gave what it handed the student's
// process, for the words of what comes back (driven_harness.cpp's findings,
// driven_page.cpp's roll-call): each called function by its id, and each
// communicator by the side's number for it. Both live in driven_page.cpp.
#pragma once

#include <cstdint>
#include <string>

namespace dtrain::calls {

// A call of `name` goes out (its id is function_id(name)).
void note_called_name(const std::string& name);
// The name of the function with this id, or "" if the harness called none.
std::string function_called(std::int64_t id);
// A communicator by the side's number, as the harness named it.
std::string comm_called_by_number(std::int32_t comm);

}  // namespace dtrain::calls
