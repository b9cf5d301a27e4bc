// student_server.cpp: the student's process of the driven mode (driven.h):
// the student's files and the framework they call, and nothing of the
// harness. It carries out the calls its rank's side hands it, and ends
// when the side hands it none.
//   KIT_STUDENT_PROGRAM=build/reference/student_server tools/kitrun -n 4 build/driven_calls_demo
// Its one flag, which the side passes on from the harness's arguments:
//   --no-syscall-filter   run the calls without the system-call filter (the student's own runs)
//
// Before the first call, and so before any code of the student's runs, it
// puts on itself every guard a test program puts on the code under test
// (tests/harness/mpi_test_main.cpp): the heap budget, the data and stack
// limits, and the system-call filter. What no guard catches, the side and
// the harness see from outside.
#include <cstdio>
#include <cstring>

#include "driven.h"

int main(int argc, char** argv) {
  bool filter = true;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--no-syscall-filter") == 0) {
      filter = false;
    } else {
      std::fprintf(stderr, "student_server: unknown argument '%s' (the kit's MPI side starts it)\n", argv[i]);
      return 2;
    }
  }
  const dtrain::link::FilterCode state = dtrain::calls::guard_student_process(filter, false);
  return dtrain::calls::serve_calls(dtrain::calls::student_functions(), state);
}
