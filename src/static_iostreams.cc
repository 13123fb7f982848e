// Linked into the static build only, with
// -Wl,--wrap=_ZNSt8ios_base4InitC1Ev (meson.build).
//
// Every translation unit that includes <iostream> (CLI11's headers and a
// dozen of yaml-cpp's objects do) constructs a std::ios_base::Init before
// main, and the first of them builds cin, cout, cerr, clog, their wide
// twins and the classic locale's facets: about 0.07 ms and 16 page faults
// of every `podvisor kill` on the development VM (README.md, "Static
// build"), for eight streams podvisor never writes to.
//
// podvisor prints with stdio only, and scripts/lint.sh keeps the standard
// streams out of src/. The one user left is CLI11's App::exit(), which cli.cc
// does not call. String streams need none of this: the locale initialises
// itself on first use. So those constructors do nothing here; their
// destructors, still registered, see a reference count that never reached 2
// and flush nothing.
extern "C" {

// NOLINTNEXTLINE(bugprone-reserved-identifier,readability-identifier-naming)
void __wrap__ZNSt8ios_base4InitC1Ev(void* /*init*/) {}

}  // extern "C"
