// A bypass of the identifier rules the link check must refuse.
//   python3 -m pytest grader/tests/test_link_check.py     (compiles and checks every file here)
// refused: static or thread-local storage
namespace { double kept[784 * 256]; }
double* keep() { return kept; }
