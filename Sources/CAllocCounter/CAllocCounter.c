#define _GNU_SOURCE
#include "CAllocCounter.h"
#include <errno.h>
#include <stddef.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

static __thread unsigned long long thread_allocations;

void *malloc(size_t n) { thread_allocations++; return __libc_malloc(n); }
void *calloc(size_t a, size_t b) { thread_allocations++; return __libc_calloc(a, b); }
void *realloc(void *p, size_t n) { thread_allocations++; return __libc_realloc(p, n); }
void free(void *p) { __libc_free(p); }
void *memalign(size_t align, size_t n) { thread_allocations++; return __libc_memalign(align, n); }
void *aligned_alloc(size_t align, size_t n) { thread_allocations++; return __libc_memalign(align, n); }
int posix_memalign(void **out, size_t align, size_t n) {
    thread_allocations++;
    void *p = __libc_memalign(align, n);
    if (!p) return ENOMEM;
    *out = p;
    return 0;
}

unsigned long long alloc_counter_thread_allocations(void) { return thread_allocations; }
