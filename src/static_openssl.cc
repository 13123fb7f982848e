// Linked into the static build only, with -Wl,--wrap=OPENSSL_cpuid_setup
// (meson.build).
//
// A statically linked libcrypto puts a call to OPENSSL_cpuid_setup in the
// .init section of the program, so it runs before main in every process,
// the client commands included (README.md, "Static build"). It probes the CPU with CPUID
// instructions, each of which traps to the hypervisor in a VM: about 4% of a whole `podvisor kill`
// on the development VM, for features the client never uses.
//
// That first call, which always comes first because .init runs before any
// constructor, is skipped. OpenSSL makes the call again itself, from
// OPENSSL_init_crypto, before any of its crypto runs, and podvisor's two
// users of it initialise it first (oci/digest.cc; the TLS client through
// OPENSSL_init_ssl), so the features are still detected, where needed.
extern "C" {

void __real_OPENSSL_cpuid_setup(void);  // NOLINT(bugprone-reserved-identifier)

void __wrap_OPENSSL_cpuid_setup(void) {  // NOLINT(bugprone-reserved-identifier)
  static bool init_section_call_skipped = false;
  if (!init_section_call_skipped) {
    init_section_call_skipped = true;
    return;
  }
  __real_OPENSSL_cpuid_setup();
}

}  // extern "C"
