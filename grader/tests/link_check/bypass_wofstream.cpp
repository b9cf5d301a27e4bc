// A bypass of the identifier rules the link check must refuse.
//   python3 -m pytest grader/tests/test_link_check.py     (compiles and checks every file here)
// refused: uses std::basic_ofstream<wchar_t
#include <fstream>
void write_out() { std::wofstream out("/tmp/x"); out << L"x"; }
