// A bypass of the identifier rules the link check must refuse.
//   python3 -m pytest grader/tests/test_link_check.py     (compiles and checks every file here)
// refused: uses __libc_malloc
extern "C" void* __libc_malloc(unsigned long);
void* keep(unsigned long n) { return __libc_malloc(n); }
