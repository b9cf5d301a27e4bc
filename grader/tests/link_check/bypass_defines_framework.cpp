// A bypass of the identifier rules the link check must refuse.
//   python3 -m pytest grader/tests/test_link_check.py     (compiles and checks every file here)
// refused: defines dtrain::HeapWatch::available()
// The framework is an archive: a definition here would replace the kit's own.
// heap_watch.h is not on a student file's include path (framework/include/
// only), so the class is declared by hand, as it is in the kit.
namespace dtrain {
class HeapWatch {
 public:
  static bool available();
};
bool HeapWatch::available() { return false; }
}  // namespace dtrain
