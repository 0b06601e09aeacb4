// The floor for `Scripts/bench-fanout handshakes-10k` on this machine: the least a
// handshake can cost when the client has one core. A server thread on core 0 accepts,
// reads one request and writes a 129-byte answer (a 101's size) with nothing else to do;
// the client on core 1 opens N connections as `scrollsync load` does (64 every 50 µs,
// non-blocking connect, the ~200-byte upgrade request sent at once) and reads the answers.
// No WebSocket, no JSON, no allocation: what is left is the kernel's work per connection.
// Given a port, it leaves out its own server and sends a real upgrade request for
// /rooms/floor there instead (a ScrollSync server's 101 and welcome count as the answer):
// the server's handshake rate with the cheapest client there is.
// RATE (connections a second) paces the connects; without it, 64 every 50 µs.
//   cc -O2 -o connect-floor connect-floor.c -lpthread && ./connect-floor [N] [PORT] [RATE]
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int listener;
/// Writes that were short or failed other than with EAGAIN (a connect still in progress):
/// counted, reported and fatal, never ignored.
static int shortWrites = 0;

/// Sends the whole of `bytes` or counts a short write; -1 with EAGAIN means "not yet".
static ssize_t sendAll(int fd, const void *bytes, size_t length) {
    ssize_t sent = send(fd, bytes, length, MSG_NOSIGNAL);
    if (sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOTCONN)) return -1;
    if (sent != (ssize_t)length) __atomic_add_fetch(&shortWrites, 1, __ATOMIC_RELAXED);
    return sent;
}

static double seconds(clockid_t clock) {
    struct timespec t;
    clock_gettime(clock, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void pin(int core) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(core, &set);
    sched_setaffinity(0, sizeof set, &set);
}

static void *serve(void *unused) {
    (void)unused;
    pin(0);
    int epoll = epoll_create1(0);
    struct epoll_event event = {.events = EPOLLIN, .data.fd = listener};
    epoll_ctl(epoll, EPOLL_CTL_ADD, listener, &event);
    struct epoll_event events[256];
    char buffer[4096], answer[129];
    memset(answer, 'a', sizeof answer);
    for (;;) {
        int count = epoll_wait(epoll, events, 256, -1);
        for (int i = 0; i < count; i++) {
            int fd = events[i].data.fd;
            if (fd == listener) {
                for (int n = 0; n < 64; n++) {
                    int accepted = accept4(listener, NULL, NULL, SOCK_NONBLOCK);
                    if (accepted < 0) break;
                    struct epoll_event in = {.events = EPOLLIN, .data.fd = accepted};
                    epoll_ctl(epoll, EPOLL_CTL_ADD, accepted, &in);
                }
            } else if (recv(fd, buffer, sizeof buffer, 0) > 0) {
                if (sendAll(fd, answer, sizeof answer) < 0) __atomic_add_fetch(&shortWrites, 1, __ATOMIC_RELAXED);
            }
        }
    }
    return NULL;
}

int main(int argc, char **argv) {
    double rate = argc > 3 ? atof(argv[3]) : 64 / 50e-6;
    int total = argc > 1 ? atoi(argv[1]) : 9900;  // both ends count against the 20,000 descriptors a process may open here
    struct rlimit limit = {2 * total + 100, 2 * total + 100};  // both ends are in this process
    setrlimit(RLIMIT_NOFILE, &limit);
    listener = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    int one = 1;
    setsockopt(listener, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t length = sizeof address;
    if (bind(listener, (struct sockaddr *)&address, sizeof address) || listen(listener, 65535)) return perror("listen"), 1;
    getsockname(listener, (struct sockaddr *)&address, &length);
    char request[512];
    size_t requestLength = 200;
    memset(request, 'r', requestLength);
    if (argc > 2) {
        address.sin_port = htons(atoi(argv[2]));
        requestLength = snprintf(request, sizeof request,
            "GET /rooms/floor HTTP/1.1\r\nHost: 127.0.0.1:%s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: scrollsync.v1\r\n\r\n",
            argv[2]);
    } else {
        pthread_t server;
        pthread_create(&server, NULL, serve, NULL);
        usleep(100000);
    }
    pin(1);
    int epoll = epoll_create1(0);
    struct epoll_event events[256];
    char buffer[4096];
    char *waiting = calloc(2 * total + 1024, 1);  // by descriptor (both ends are ours): the request is still to be sent
    int answered = 0, opened = 0, refused = 0;
    double start = seconds(CLOCK_MONOTONIC), cpu = seconds(CLOCK_THREAD_CPUTIME_ID), ninetyNine = 0;
    while (answered + refused < total && seconds(CLOCK_MONOTONIC) - start < 30) {
        double due = start + (opened / 64) * 64 / rate;
        while (opened < total && seconds(CLOCK_MONOTONIC) >= due) {
            for (int n = 0; n < 64 && opened < total; n++, opened++) {
                int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
                setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                connect(fd, (struct sockaddr *)&address, sizeof address);
                // Sent at once when the connect has finished (on loopback it has), else when writable.
                waiting[fd] = sendAll(fd, request, requestLength) < 0;
                struct epoll_event in = {.events = EPOLLIN | (waiting[fd] ? EPOLLOUT : 0), .data.fd = fd};
                epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &in);
            }
            due = start + (opened / 64) * 64 / rate;
        }
        int count = epoll_wait(epoll, events, 256, opened < total ? 0 : 100);
        for (int i = 0; i < count; i++) {
            int fd = events[i].data.fd;
            if (waiting[fd] && (events[i].events & EPOLLOUT)) {
                waiting[fd] = sendAll(fd, request, requestLength) < 0;
                struct epoll_event in = {.events = EPOLLIN, .data.fd = fd};
                if (!waiting[fd]) epoll_ctl(epoll, EPOLL_CTL_MOD, fd, &in);
            }
            if ((events[i].events & EPOLLIN) && recv(fd, buffer, sizeof buffer, 0) > 0) {
                struct epoll_event none = {0};
                epoll_ctl(epoll, EPOLL_CTL_DEL, fd, &none);  // one answer per connection; what follows is not read
                if (argc > 2 && memcmp(buffer, "HTTP/1.1 101 ", 13) != 0) {
                    if (refused++ == 0) fprintf(stderr, "first refusal: %.120s\n", buffer);  // counted apart, never as an answer
                } else if (++answered == total * 99 / 100) {
                    ninetyNine = seconds(CLOCK_MONOTONIC) - start;
                }
            }
        }
    }
    double elapsed = seconds(CLOCK_MONOTONIC) - start;
    if (refused) printf("%d refused (not 101)\n", refused);
    printf("%d of %d answered in %.3f s: %.0f/s (99%% in %.3f s: %.0f/s); client thread CPU %.1f µs per connection\n", answered, total,
           elapsed, answered / elapsed, ninetyNine, total * 0.99 / ninetyNine,
           (seconds(CLOCK_THREAD_CPUTIME_ID) - cpu) / total * 1e6);
    int failed = __atomic_load_n(&shortWrites, __ATOMIC_RELAXED);
    if (failed) return fprintf(stderr, "connect-floor: %d writes short or failed\n", failed), 1;
    if (answered < total) return fprintf(stderr, "connect-floor: %d of %d never answered\n", total - answered, total), 1;
    return 0;
}
