#include "cli/cli.h"
namespace podvisor::cli { int Main(int, char**) { return 0; } }  // placeholder
