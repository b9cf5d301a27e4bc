// A bypass of the identifier rules the link check must refuse.
//   python3 -m pytest grader/tests/test_link_check.py     (compiles and checks every file here)
// refused: static or thread-local storage
double* keep() { thread_local double kept[784 * 256]; return kept; }
