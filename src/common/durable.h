// Durability of files written as PATH.tmp then renamed over PATH (the GGUF and safetensors
// writers, the quantizer's work directory, the cache snapshot): the file's bytes are synced
// before the rename, and the directory after it, so that after a crash or power loss PATH is
// the old file or the complete new one, never a name pointing at unwritten data.
#pragma once

#include <cstdio>
#include <functional>
#include <string>

#include "frugal/status.h"

namespace frugal {

// fsync of an open stdio file, after flushing it.
Status SyncFile(std::FILE* f, const std::string& name);
// fsync of a file or directory by path.
Status SyncPath(const std::string& path);
// fsync of the directory holding `path`, making a rename into it durable.
Status SyncParentDirectory(const std::string& path);

// Writes PATH by way of PATH.tmp: `write` puts the bytes into the open file (stdio; a failed
// fwrite needs no check of its own: the stream's error flag is checked after `write` returns,
// so `write` may simply stop when std::ferror says so) and returns its own error for anything
// else (a tensor that came short). Then the file is synced, closed, renamed to PATH and the
// directory synced. On a failure before the rename PATH.tmp is removed and PATH is untouched.
Status WriteFileAtomically(const std::string& path, const std::function<Status(std::FILE*)>& write);

}  // namespace frugal
