// A bypass of the identifier rules the link check must refuse.
//   python3 -m pytest grader/tests/test_link_check.py     (compiles and checks every file here)
// refused: defines read: a C name
// Replaces libc's read for the whole program, the harness's reading of its key included.
#include <unistd.h>
extern "C" ssize_t read(int, void*, size_t) { return 0; }
