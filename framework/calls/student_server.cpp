// student_server.cpp: the student's process of the driven mode (driven.h):
// the student's files and the framework they call, and nothing of the
// harness. It carries out the calls its rank's side hands it, and ends
// when the side hands it none.
//   KIT_STUDENT_PROGRAM=build/reference/student_server tools/kitrun -n 4 build/driven_calls_demo
#include "driven.h"

int main() { return dtrain::calls::serve_calls(dtrain::calls::student_functions()); }
