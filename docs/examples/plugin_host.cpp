// The host of plugin.cpp: a program that does not link dix, loads the plugin with dlopen() and
// runs its one function. What a plugin host does with a shared library that carries dix.
//
//   plugin_host PLUGIN DIR   loads PLUGIN (a path), calls dix_plugin_run(DIR); exits with its
//                            answer, or 1 when the plugin does not load
//
// The plugin is never unloaded (no dlclose): RocksDB, which it brings in, keeps background
// threads of its process-wide environment running until the process ends, and unmapping their
// code under them would crash. A host that must unload plugins cannot host dix in one.
#include <dlfcn.h>

#include <iostream>

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: plugin_host PLUGIN DIR\n";
    return 2;
  }
  // RTLD_LOCAL: the plugin's symbols stay out of the global namespace, as a host loading several
  // plugins would keep them.
  void* plugin = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (plugin == nullptr) {
    std::cerr << "plugin_host: cannot load " << argv[1] << ": " << dlerror() << "\n";
    return 1;
  }
  using run_function = int (*)(const char*) noexcept;
  auto run = reinterpret_cast<run_function>(dlsym(plugin, "dix_plugin_run"));
  if (run == nullptr) {
    std::cerr << "plugin_host: " << argv[1] << " has no dix_plugin_run: " << dlerror() << "\n";
    return 1;
  }
  return run(argv[2]);
}
