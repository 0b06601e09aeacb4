// Counts a process's heap allocations on the real path, for Scripts/count-allocations.
// LD_PRELOAD it into the server: every malloc, calloc, realloc, posix_memalign, aligned_alloc
// and memalign is counted (then served by glibc), and each SIGUSR2 appends the count so far
// as a line to the file named by MALLOC_COUNT_FILE. Build: cc -O2 -shared -fPIC -o malloc-count.so malloc-count.c
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

static atomic_ullong allocations;
static int output = -1;

void *malloc(size_t size) { atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed); return __libc_malloc(size); }
void *calloc(size_t count, size_t size) { atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed); return __libc_calloc(count, size); }
void *realloc(void *pointer, size_t size) { atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed); return __libc_realloc(pointer, size); }
void *memalign(size_t alignment, size_t size) { atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed); return __libc_memalign(alignment, size); }
void *aligned_alloc(size_t alignment, size_t size) { return memalign(alignment, size); }
int posix_memalign(void **result, size_t alignment, size_t size) {
    void *pointer = memalign(alignment, size);
    if (!pointer) return ENOMEM;
    *result = pointer;
    return 0;
}

/// Appends the count as a decimal line (async-signal-safe: no stdio, no allocation).
static void report(int signal) {
    (void)signal;
    if (output < 0) return;
    char digits[24];
    int at = sizeof digits;
    digits[--at] = '\n';
    unsigned long long value = atomic_load_explicit(&allocations, memory_order_relaxed);
    do { digits[--at] = (char)('0' + value % 10); value /= 10; } while (value);
    ssize_t ignored = write(output, digits + at, sizeof digits - at);
    (void)ignored;
}

__attribute__((constructor)) static void start(void) {
    const char *path = getenv("MALLOC_COUNT_FILE");
    if (path) output = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = report;
    action.sa_flags = SA_RESTART;
    sigaction(SIGUSR2, &action, NULL);
}
