// A bypass of the identifier rules the link check must refuse.
//   python3 -m pytest grader/tests/test_link_check.py     (compiles and checks every file here)
// refused: uses dtrain::LibraryAllocations::LibraryAllocations()
// The kit's own exemption for library allocations, declared by hand.
namespace dtrain { class LibraryAllocations { public: LibraryAllocations(); ~LibraryAllocations(); }; }
double* keep() { dtrain::LibraryAllocations exempt; return new double[784 * 256]; }
