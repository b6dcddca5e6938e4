#pragma once
// PJRT_LITE_ASSERT guards internal invariants and programming errors (never user input, which
// gets a Status). It vanishes under NDEBUG; define PJRT_LITE_ASSERT before including any
// pjrt_lite header to route it elsewhere.

#include <cstdio>
#include <cstdlib>

#ifndef PJRT_LITE_ASSERT
#ifdef NDEBUG
#define PJRT_LITE_ASSERT(cond, msg) ((void)0)
#else
#define PJRT_LITE_ASSERT(cond, msg)                                                          \
  ((cond) ? (void)0                                                                          \
          : (std::fprintf(stderr, "%s:%d: pjrt_lite assertion '%s' failed: %s\n", __FILE__, \
                          __LINE__, #cond, msg),                                             \
             std::abort()))
#endif
#endif
