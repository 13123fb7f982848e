// `podvisor images ls` and `images prune`: the layer store of a state
// directory (image/layer_store.h, S16) as the user sees and empties it.
#pragma once

#include <CLI/CLI.hpp>

namespace podvisor::cli {

// Adds ls (alias list) and prune under the `images` command.
void AddImageSubcommands(CLI::App& images, int& exit_code);

}  // namespace podvisor::cli
