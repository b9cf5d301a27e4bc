// A bypass of the identifier rules the link check must refuse.
//   python3 -m pytest grader/tests/test_link_check.py     (compiles and checks every file here)
// refused: uses dtrain::heap_hooks::freed(void*)
// heap_watch.h is not among the internal headers the static check knows.
#include "heap_watch.h"
double* keep() { double* p = new double[784 * 256]; dtrain::heap_hooks::freed(p); return p; }
