// A bypass of the identifier rules the link check must refuse.
//   python3 -m pytest grader/tests/test_link_check.py     (compiles and checks every file here)
// refused: uses dtrain::heap_hooks::freed(void*)
// The kit's internal function, called by its mangled name behind extern "C".
extern "C" void _ZN6dtrain10heap_hooks5freedEPv(void*);
void forget(void* p) { _ZN6dtrain10heap_hooks5freedEPv(p); }
