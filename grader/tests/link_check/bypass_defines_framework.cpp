// A bypass of the identifier rules the link check must refuse.
//   python3 -m pytest grader/tests/test_link_check.py     (compiles and checks every file here)
// refused: defines dtrain::HeapWatch::available()
// The framework is an archive: a definition here would replace the kit's own.
#include "heap_watch.h"
namespace dtrain { bool HeapWatch::available() { return false; } }
