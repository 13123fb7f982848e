// Linked into the static build only, with -Wl,--wrap=_dl_get_origin
// (meson.build).
//
// A static glibc sets up its dynamic loader's idea of the main program in
// every process, and part of that is the program's origin, the directory
// `$ORIGIN` stands for in the paths of dlopen(): a readlink() of
// /proc/self/exe, which makes procfs instantiate the new process's
// /proc/<pid> entries. About 30 us of every command that reaches main on
// the development VM (README.md, "Static build"). podvisor never calls
// dlopen() with `$ORIGIN` (nor, linked statically, dlopen() at all), so the
// origin is left unknown, as glibc leaves it when the readlink fails:
// (char *) -1, which a later `$ORIGIN` substitution treats as unknown.
extern "C" {

// NOLINTNEXTLINE(bugprone-reserved-identifier,readability-identifier-naming)
const char* __wrap__dl_get_origin(void) {
  return reinterpret_cast<const char*>(-1);  // NOLINT(performance-no-int-to-ptr)
}

}  // extern "C"
