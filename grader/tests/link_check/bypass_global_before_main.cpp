// A bypass of the identifier rules the link check must refuse.
//   python3 -m pytest grader/tests/test_link_check.py     (compiles and checks every file here)
// refused: static initializer
// Reserved before main, so no call of the layer allocated it.
#include <vector>
std::vector<double> kept(784 * 256);
double* keep() { return kept.data(); }
