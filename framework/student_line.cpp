// student_line.cpp: the call stack's first frame in a student file. The
// student files are compiled with line tables (-g1, CMakeLists.txt).
#include "student_line.h"

#include "platform.h"

namespace dtrain {

namespace {

// The student files by name, wherever they were compiled from (student/,
// reference/, the grader's scratch directory).
const char* const kStudentFiles[] = {"func_impl.cpp", "data_parallel_preprocess.cpp", "zero_dp_stage3.cpp"};

bool is_student_file(const std::string& path) {
  for (const char* name : kStudentFiles) {
    const std::string n(name);
    if (path.size() >= n.size() && path.compare(path.size() - n.size(), n.size(), n) == 0 &&
        (path.size() == n.size() || path[path.size() - n.size() - 1] == '/'))
      return path.find("/framework/") == std::string::npos;
  }
  return false;
}

}  // namespace

std::string student_line_now() {
  for (const std::string& where : platform::call_stack_lines()) {
    const size_t colon = where.rfind(':');
    if (colon == std::string::npos || !is_student_file(where.substr(0, colon))) continue;
    std::string line = where.substr(colon + 1);
    line = line.substr(0, line.find(' '));  // "57 (discriminator 2)"
    if (line.empty() || line == "?" || line == "0") continue;
    const std::string path = where.substr(0, colon);
    return "student/" + path.substr(path.rfind('/') + 1) + ":" + line;
  }
  return "";
}

}  // namespace dtrain
