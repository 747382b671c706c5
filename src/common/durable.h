// Durability of files written as PATH.tmp then renamed over PATH (the GGUF and safetensors
// writers, the quantizer's work directory, the cache snapshot): the file's bytes are synced
// before the rename, and the directory after it, so that after a crash or power loss PATH is
// the old file or the complete new one, never a name pointing at unwritten data.
#pragma once

#include <cstdio>
#include <string>

#include "frugal/status.h"

namespace frugal {

// fsync of an open stdio file, after flushing it.
Status SyncFile(std::FILE* f, const std::string& name);
// fsync of a file or directory by path.
Status SyncPath(const std::string& path);
// fsync of the directory holding `path`, making a rename into it durable.
Status SyncParentDirectory(const std::string& path);

}  // namespace frugal
