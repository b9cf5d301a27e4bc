// A bypass of the identifier rules the link check must refuse.
//   python3 -m pytest grader/tests/test_link_check.py     (compiles and checks every file here)
// refused: uses fopen64
#include <cstdio>
extern "C" FILE* fopen64(const char*, const char*);
void leak() { if (FILE* f = fopen64("/tmp/x", "w")) std::fputs("x", f); }
