// The floor for `Scripts/bench-fanout latency-1k` on this machine: the least latency a
// one-core server can give 1,000 followers of a presenter at 60 Hz, when every follower
// has its own TCP socket and so its own send. A server thread on core 0 reads each
// update from the presenter's socket and sends a ready 100-byte frame (the update's
// timestamp copied in) to every follower, one send() each, as any server must; the client
// thread on core 1 is the presenter and the followers: it sends an update every 1/60 s
// and epoll-reads the followers, taking each delivery's latency from the timestamp.
// No WebSocket, no JSON, no room: what is left is the kernel's work per delivery.
//   cc -O2 -o fanout-floor fanout-floor.c -lpthread && ./fanout-floor [FOLLOWERS] [SECONDS] [busy]
// With `busy`, the client polls epoll without sleeping (as `scrollsync load --busy-poll`).
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { frameSize = 100 };
static int followers, presenterServerSide, *followerServerSide;

static int64_t microseconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000 + t.tv_nsec / 1000;
}

static void pin(int core) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(core, &set);
    sched_setaffinity(0, sizeof set, &set);
}

static int64_t shortWrites = 0;

static void *serve(void *unused) {
    (void)unused;
    pin(0);
    int epoll = epoll_create1(0);
    struct epoll_event event = {.events = EPOLLIN, .data.fd = presenterServerSide};
    epoll_ctl(epoll, EPOLL_CTL_ADD, presenterServerSide, &event);
    char frame[frameSize];
    memset(frame, ' ', sizeof frame);
    frame[0] = (char)0x81;  // a text frame of 98 bytes: FIN + opcode, then its length
    frame[1] = frameSize - 2;
    for (;;) {
        struct epoll_event events[4];
        if (epoll_wait(epoll, events, 4, -1) < 1) continue;
        int64_t t;
        while (recv(presenterServerSide, &t, sizeof t, MSG_DONTWAIT) == sizeof t) {
            memcpy(frame + 2, &t, sizeof t);
            for (int i = 0; i < followers; i++) {
                // A full socket buffer (EAGAIN) or a short write is a delivery lost: counted, reported, fatal.
                if (send(followerServerSide[i], frame, sizeof frame, MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)sizeof frame)
                    __atomic_add_fetch(&shortWrites, 1, __ATOMIC_RELAXED);
            }
        }
    }
    return NULL;
}

static int compare(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    followers = argc > 1 ? atoi(argv[1]) : 1000;
    double seconds = argc > 2 ? atof(argv[2]) : 10;
    int busy = argc > 3 && strcmp(argv[3], "busy") == 0;
    struct rlimit limit = {2 * followers + 100, 2 * followers + 100};  // both ends are in this process
    setrlimit(RLIMIT_NOFILE, &limit);
    int listener = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t length = sizeof address;
    if (bind(listener, (struct sockaddr *)&address, sizeof address) || listen(listener, 4096)) return perror("listen"), 1;
    getsockname(listener, (struct sockaddr *)&address, &length);
    int *clientSide = calloc(followers + 1, sizeof(int));
    followerServerSide = calloc(followers, sizeof(int));
    for (int i = 0; i <= followers; i++) {  // the last one is the presenter
        clientSide[i] = socket(AF_INET, SOCK_STREAM, 0);
        setsockopt(clientSide[i], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (connect(clientSide[i], (struct sockaddr *)&address, sizeof address)) return perror("connect"), 1;
        int accepted = accept(listener, NULL, NULL);
        setsockopt(accepted, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (i < followers) followerServerSide[i] = accepted; else presenterServerSide = accepted;
    }
    pthread_t server;
    pthread_create(&server, NULL, serve, NULL);
    pin(1);
    int epoll = epoll_create1(0);
    for (int i = 0; i < followers; i++) {
        struct epoll_event in = {.events = EPOLLIN, .data.fd = clientSide[i]};
        epoll_ctl(epoll, EPOLL_CTL_ADD, clientSide[i], &in);
    }
    int64_t capacity = (int64_t)(seconds * 61) * followers + 1, count = 0, sent = 0;
    int64_t *latencies = malloc(capacity * sizeof(int64_t));
    int64_t start = microseconds(), end = start + (int64_t)(seconds * 1e6), next = start;
    char buffer[40 * frameSize];  // whole frames only: a read never splits one
    while (microseconds() < end + 200000) {
        int64_t now = microseconds();
        if (now >= next && now < end) {
            if (send(clientSide[followers], &now, sizeof now, MSG_NOSIGNAL) != (ssize_t)sizeof now)
                return fprintf(stderr, "fanout-floor: the presenter's write was short or failed: %s\n", strerror(errno)), 1;
            sent++;
            next += 1000000 / 60;
        }
        int timeout = busy ? 0 : (int)((next > now ? next - now : 0) / 1000);
        struct epoll_event events[256];
        int ready = epoll_wait(epoll, events, 256, timeout);
        for (int i = 0; i < ready; i++) {
            ssize_t got = recv(events[i].data.fd, buffer, sizeof buffer, 0);
            int64_t arrived = microseconds();
            for (ssize_t at = 0; at + frameSize <= got && count < capacity; at += frameSize) {
                int64_t t;
                memcpy(&t, buffer + at + 2, sizeof t);
                latencies[count++] = arrived - t;
            }
        }
    }
    qsort(latencies, count, sizeof(int64_t), compare);
    if (count == 0) return fprintf(stderr, "no deliveries\n"), 1;
    int64_t lost = __atomic_load_n(&shortWrites, __ATOMIC_RELAXED);
    printf("%lld of %lld deliveries; latency ms p50 %.3f p99 %.3f max %.3f%s; short writes %lld\n", (long long)count, (long long)sent * followers,
           latencies[count / 2] / 1e3, latencies[count * 99 / 100] / 1e3, latencies[count - 1] / 1e3, busy ? " (client busy-polling)" : "",
           (long long)lost);
    if (lost > 0 || count < sent * followers) return fprintf(stderr, "fanout-floor: %lld short writes, %lld deliveries missing\n",
                                                            (long long)lost, (long long)(sent * followers - count)), 1;
    return 0;
}
