// student_line.cpp: the call stack's first frame in a student file. The
// student files are compiled with line tables (-g1, CMakeLists.txt).
#include "student_line.h"

#include <cstdlib>
#include <fstream>

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

struct Frame {
  std::string path;  // as the line table has it
  int line = 0;
};

Frame innermost_student_frame() {
  for (const std::string& where : platform::call_stack_lines()) {
    const size_t colon = where.rfind(':');
    if (colon == std::string::npos || !is_student_file(where.substr(0, colon))) continue;
    const int line = std::atoi(where.c_str() + colon + 1);  // "57 (discriminator 2)"; "?" reads as 0
    if (line > 0) return {where.substr(0, colon), line};
  }
  return {};
}

std::string student_line_now() {
  const Frame frame = innermost_student_frame();
  if (frame.line == 0) return "";
  return "student/" + frame.path.substr(frame.path.rfind('/') + 1) + ":" + std::to_string(frame.line);
}

std::string student_source_now() {
  const Frame frame = innermost_student_frame();
  std::ifstream file(frame.path);
  std::string text;
  for (int i = 0; i < frame.line && std::getline(file, text);) ++i;
  if (frame.line == 0 || !file) return "";
  const size_t first = text.find_first_not_of(" \t"), last = text.find_last_not_of(" \t\r");
  return first == std::string::npos ? "" : text.substr(first, last - first + 1);
}

}  // namespace dtrain
