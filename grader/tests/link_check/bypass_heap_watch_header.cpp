// A bypass of the identifier rules the link check must refuse.
//   python3 -m pytest grader/tests/test_link_check.py     (compiles and checks every file here)
// refused: uses dtrain::heap_hooks::freed(void*)
// heap_watch.h is not on a student file's include path (framework/include/
// only), and the static check knows no name of it: declared by hand, its
// hook still links unless the link check refuses it.
namespace dtrain { namespace heap_hooks { void freed(void* p); } }
double* keep() { double* p = new double[784 * 256]; dtrain::heap_hooks::freed(p); return p; }
