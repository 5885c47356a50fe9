/* SPDX-License-Identifier: MIT */
#ifndef OR_ALLOC_COUNT_H
#define OR_ALLOC_COUNT_H

/*
 * Heap allocations of the whole program, counted by interposition: the
 * library's steady state must not allocate (test/steady_alloc.c over TCP,
 * examples/allreduce_rank.c over the kernel socket). Include in exactly one
 * file of a program: it defines malloc and friends.
 */
#include <stdatomic.h>
#include <stddef.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

static atomic_long allocs;

void *malloc(size_t n) { allocs++; return __libc_malloc(n); }
void *calloc(size_t a, size_t b) { allocs++; return __libc_calloc(a, b); }
void *realloc(void *p, size_t n) { allocs++; return __libc_realloc(p, n); }
void *aligned_alloc(size_t a, size_t n) { allocs++; return __libc_memalign(a, n); }

#endif
