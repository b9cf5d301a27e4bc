// A bypass of the identifier rules the link check must refuse.
//   python3 -m pytest grader/tests/test_link_check.py     (compiles and checks every file here)
// refused: uses valloc
#include <cstdlib>
extern "C" void* valloc(size_t);
void* keep(size_t n) { return valloc(n); }
