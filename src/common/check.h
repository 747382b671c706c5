// Assertions. FRUGAL_CHECK is always on; FRUGAL_DCHECK only in debug builds.
// Never assert on client input: that is an InvalidArgument status.
#pragma once

#include <cstdio>
#include <cstdlib>

#define FRUGAL_CHECK(cond)                                                                 \
  do {                                                                                     \
    if (!(cond)) {                                                                         \
      std::fprintf(stderr, "%s:%d: FRUGAL_CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                        \
    }                                                                                      \
  } while (0)

#ifdef NDEBUG
#define FRUGAL_DCHECK(cond) \
  do {                      \
  } while (0)
#else
#define FRUGAL_DCHECK(cond) FRUGAL_CHECK(cond)
#endif
