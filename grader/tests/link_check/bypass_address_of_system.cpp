// A bypass of the identifier rules the link check must refuse.
//   python3 -m pytest grader/tests/test_link_check.py     (compiles and checks every file here)
// refused: uses system
#include <cstdlib>
int run() { auto run = &std::system; return run("id"); }
