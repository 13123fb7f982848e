#include "cli/cli.h"

int main(int argc, char** argv) {
  return podvisor::cli::Main(argc, argv);
}
