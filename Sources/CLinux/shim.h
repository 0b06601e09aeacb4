// Linux interfaces that Glibc's Swift module leaves out: epoll, eventfd, malloc_trim, and the GNU
// calls accept4 and sched_getaffinity (declared here because the Glibc module is built
// without _GNU_SOURCE).
#ifndef SCROLLSYNC_CLINUX_SHIM_H
#define SCROLLSYNC_CLINUX_SHIM_H
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <netinet/tcp.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <spawn.h>
#include <malloc.h>

extern int accept4(int fd, struct sockaddr *address, socklen_t *length, int flags);
extern int sched_getaffinity(int pid, size_t size, void *mask);
extern int pipe2(int fds[2], int flags);
extern int posix_spawn_file_actions_addclosefrom_np(posix_spawn_file_actions_t *actions, int from);

/// CPUs this process may run on (its affinity mask), or 0 if unknown.
static inline int scrollsync_allowed_cpu_count(void) {
    unsigned long mask[16] = {0};
    if (sched_getaffinity(0, sizeof(mask), mask) != 0) return 0;
    int count = 0;
    for (int i = 0; i < 16; i++) count += __builtin_popcountl(mask[i]);
    return count;
}

/// The terminal's size in rows and columns; 0 when `fd` is not a terminal.
static inline int scrollsync_window_size(int fd, int *rows, int *columns) {
    struct winsize size;
    if (ioctl(fd, TIOCGWINSZ, &size) != 0) return -1;
    *rows = size.ws_row;
    *columns = size.ws_col;
    return 0;
}
#endif
