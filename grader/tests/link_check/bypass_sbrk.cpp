// A bypass of the identifier rules the link check must refuse.
//   python3 -m pytest grader/tests/test_link_check.py     (compiles and checks every file here)
// refused: uses sbrk
#include <unistd.h>
void* keep(long n) { return sbrk(n); }
