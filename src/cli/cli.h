// The podvisor command line (CLI11): one entry point the few-line main.cc
// hands argv to. Returns the process exit status of docs/INTERFACE.md.
#pragma once

namespace podvisor::cli {

int Main(int argc, char** argv);

}  // namespace podvisor::cli
