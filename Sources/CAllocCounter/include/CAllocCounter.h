// Test-only allocation counter: linking this target into a test executable interposes malloc and
// friends and counts calls per thread, so a test can prove a code path allocates nothing.
#ifndef PUBBOT_CALLOCCOUNTER_H
#define PUBBOT_CALLOCCOUNTER_H
/// Heap allocations (malloc, calloc, realloc, posix_memalign, aligned_alloc, memalign) made by
/// the calling thread since it started.
unsigned long long alloc_counter_thread_allocations(void);
#endif
