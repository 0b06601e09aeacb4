// ttyfan: N terminal readers (GET /rooms/bench/tty at three sizes) and one presenter on one
// epoll thread, measuring what a `curl -N` audience feels and what it costs the server.
// The presenter shares a document of numbered headings (M000000, M000001, ...) and puts heading
// k at the top of its view with state k, at --rate a second; a frame shows state k when its first
// number after the cursor-home is k. Staleness of (state k, reader): from k's send to the reader's
// first frame showing k or a later state (CLOCK_MONOTONIC). Server CPU from /proc/PID/stat over the
// measured window; frames the server rendered over it (/metrics) and per state sent (three sizes:
// 3 when the renderer keeps up). One JSON line on standard output.
//   ttyfan --port P -n 1000 --rate 60 --duration 8 --warmup 1 --server-pid PID
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define HEADINGS 4000
static uint64_t now_ns(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return (uint64_t)t.tv_sec * 1000000000ull + t.tv_nsec; }

typedef struct { uint64_t at; int32_t index; } Arrival;
typedef struct {
    int fd, state;           // state: 0 head, 1 body
    int match;               // progress through ESC [ H, then 'M', then digits
    int digits, value, searching;
    char head[4]; int headlen;
    Arrival *arrivals; int count, capacity;
} Reader;

static int connect_to(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) { perror("connect"); exit(1); }
    int one = 1; setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

static void write_all(int fd, const void *p, size_t n) {
    const char *c = p;
    while (n > 0) { ssize_t w = write(fd, c, n); if (w < 0) { if (errno == EAGAIN || errno == EINTR) continue; perror("write"); exit(1); } c += w; n -= (size_t)w; }
}

// A client text frame, masked with a zero key (RFC 6455 allows any key; zero leaves the payload as it is).
static void send_text(int fd, const char *text, size_t n) {
    unsigned char h[14]; size_t k = 0;
    h[k++] = 0x81;
    if (n < 126) h[k++] = 0x80 | (unsigned char)n;
    else if (n < 65536) { h[k++] = 0x80 | 126; h[k++] = n >> 8; h[k++] = n & 255; }
    else { h[k++] = 0x80 | 127; for (int i = 7; i >= 0; i--) h[k++] = (n >> (8 * i)) & 255; }
    memset(h + k, 0, 4); k += 4;
    write_all(fd, h, k); write_all(fd, text, n);
}

static double cpu_seconds(int pid) {
    char path[64], buf[1024]; snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r"); if (!f) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f); fclose(f); buf[n] = 0;
    char *p = strrchr(buf, ')'); unsigned long ut = 0, st = 0;
    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st);
    return (double)(ut + st) / sysconf(_SC_CLK_TCK);
}

// The server's count of frames rendered (`scrollsync_tty_frames_rendered_total` in /metrics),
// asked on a connection of its own; -1 when it cannot be read.
static long frames_rendered(int port) {
    int fd = connect_to(port);
    const char *ask = "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    write_all(fd, ask, strlen(ask));
    static char text[1 << 20]; size_t n = 0; ssize_t m;
    while (n < sizeof text - 1 && (m = read(fd, text + n, sizeof text - 1 - n)) > 0) n += (size_t)m;
    close(fd); text[n] = 0;
    const char *name = "\nscrollsync_tty_frames_rendered_total ", *at = strstr(text, name);
    return at ? atol(at + strlen(name)) : -1;
}

static int cmp_u64(const void *a, const void *b) { uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b; return x < y ? -1 : x > y; }

// Scans body bytes: a frame starts at ESC [ H; its first "M" and six digits name the state shown.
static void scan(Reader *r, const unsigned char *p, ssize_t n, uint64_t at) {
    for (ssize_t i = 0; i < n; i++) {
        unsigned char c = p[i];
        if (r->match == 0 && c == 0x1b) { r->match = 1; continue; }
        if (r->match == 1) { r->match = c == '[' ? 2 : 0; continue; }
        if (r->match == 2) { r->match = 0; if (c == 'H') { r->searching = 1; r->digits = -1; } continue; }
        if (!r->searching) continue;
        if (r->digits < 0) { if (c == 'M') { r->digits = 0; r->value = 0; } continue; }
        if (c >= '0' && c <= '9') {
            r->value = r->value * 10 + (c - '0');
            if (++r->digits == 6) {
                if (r->count == r->capacity) { r->capacity = r->capacity ? 2 * r->capacity : 256; r->arrivals = realloc(r->arrivals, r->capacity * sizeof(Arrival)); }
                r->arrivals[r->count++] = (Arrival){at, r->value};
                r->searching = 0;
            }
        } else r->digits = c == 'M' ? 0 : -1, r->value = 0;
    }
}

int main(int argc, char **argv) {
    int port = 19400, n = 1000, pid = 0; double rate = 60, duration = 8, warmup = 1;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--port")) port = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "-n")) n = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--rate")) rate = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--duration")) duration = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--warmup")) warmup = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--server-pid")) pid = atoi(argv[i + 1]);
        else { fprintf(stderr, "usage: ttyfan --port P -n N --rate HZ --duration S --warmup S --server-pid PID\n"); return 2; }
    }
    static const char *sizes[] = {"cols=80&rows=24", "cols=120&rows=40", "cols=200&rows=50"};
    // The presenter: join, share the document, then move.
    int presenter = connect_to(port);
    const char *up = "GET /rooms/bench?role=presenter&key=k HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                     "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: scrollsync.v1\r\n\r\n";
    write_all(presenter, up, strlen(up));
    size_t cap = 64 + HEADINGS * 64; char *doc = malloc(cap); size_t len = 0;
    len += sprintf(doc + len, "{\"type\":\"document\",\"name\":\"bench.md\",\"format\":\"markdown\",\"text\":\"# Bench\\n\\n");
    for (int k = 0; k < HEADINGS; k++) len += sprintf(doc + len, "## M%06d\\n\\nText under heading %d.\\n\\n", k, k);
    len += sprintf(doc + len, "\"}");
    usleep(200000);
    send_text(presenter, doc, len);
    fcntl(presenter, F_SETFL, O_NONBLOCK);
    int ep = epoll_create1(0);
    Reader *readers = calloc(n, sizeof(Reader));
    for (int i = 0; i < n; i++) {
        readers[i].fd = connect_to(port);
        char req[256]; int m = snprintf(req, sizeof req, "GET /rooms/bench/tty?%s HTTP/1.1\r\nHost: x\r\n\r\n", sizes[i % 3]);
        write_all(readers[i].fd, req, m);
        fcntl(readers[i].fd, F_SETFL, O_NONBLOCK);
        struct epoll_event e = {.events = EPOLLIN, .data.u32 = i};
        epoll_ctl(ep, EPOLL_CTL_ADD, readers[i].fd, &e);
    }
    int states = (int)(rate * duration) + 1;
    if (states >= HEADINGS) states = HEADINGS - 1;
    uint64_t *sent = calloc(states, sizeof(uint64_t));
    unsigned char buf[1 << 16];
    uint64_t start = now_ns(), period = (uint64_t)(1e9 / rate), next = start + (uint64_t)(warmup * 1e9);
    uint64_t end = next + (uint64_t)(duration * 1e9) + 1000000000ull;  // a second to drain
    int k = 0; double cpu0 = 0; uint64_t bytes = 0; long rendered0 = 0;
    struct epoll_event events[256];
    while (now_ns() < end) {
        uint64_t t = now_ns();
        if (k < states && t >= next) {
            if (k == 0) { rendered0 = frames_rendered(port); cpu0 = cpu_seconds(pid); }
            char msg[192]; int m = snprintf(msg, sizeof msg, "{\"type\":\"scroll\",\"offset\":%d,\"viewport\":24,\"content\":%d,\"anchor\":{\"id\":\"m%06d\",\"fraction\":0}}",
                                          4 * k + 2, 4 * HEADINGS, k);
            sent[k] = now_ns();
            send_text(presenter, msg, m);
            k++; next += period;
        }
        while (read(presenter, buf, sizeof buf) > 0) {}
        int timeout = k < states ? (int)((next > t ? next - t : 0) / 1000000) : 10;
        int got = epoll_wait(ep, events, 256, timeout);
        uint64_t at = now_ns();
        for (int e = 0; e < got; e++) {
            Reader *r = &readers[events[e].data.u32];
            ssize_t m;
            while ((m = read(r->fd, buf, sizeof buf)) > 0) { bytes += m; scan(r, buf, m, at); }
        }
    }
    double cpu = cpu_seconds(pid) - cpu0;
    long rendered1 = frames_rendered(port), rendered = rendered0 >= 0 && rendered1 >= 0 ? rendered1 - rendered0 : -1;
    // Staleness of every (state, reader) pair; pairs never covered are lost.
    uint64_t *stale = malloc(sizeof(uint64_t) * (size_t)states * n); size_t pairs = 0, lost = 0; long frames = 0;
    for (int i = 0; i < n; i++) {
        Reader *r = &readers[i]; int j = 0;
        for (int a = 0; a < r->count; a++) if (r->arrivals[a].at >= sent[0]) frames++;
        for (int s = 0; s < k; s++) {
            while (j < r->count && (r->arrivals[j].index < s || r->arrivals[j].at < sent[s])) j++;
            if (j < r->count) stale[pairs++] = r->arrivals[j].at - sent[s]; else lost++;
        }
    }
    qsort(stale, pairs, sizeof(uint64_t), cmp_u64);
    double p50 = pairs ? stale[pairs / 2] / 1e6 : 0, p99 = pairs ? stale[(size_t)(pairs * 0.99)] / 1e6 : 0;
    printf("{\"tool\":\"ttyfan\",\"readers\":%d,\"rate\":%.0f,\"states\":%d,\"frames\":%ld,\"bytes\":%lu,\"server_cpu_s\":%.3f,"
           "\"cpu_per_frame_ns\":%.0f,\"staleness_p50_ms\":%.2f,\"staleness_p99_ms\":%.2f,\"pairs_lost\":%zu,"
           "\"frames_rendered\":%ld,\"rendered_per_state\":%.2f}\n",
           n, rate, k, frames, bytes, cpu, frames ? cpu * 1e9 / frames : 0, p50, p99, lost, rendered, k && rendered >= 0 ? (double)rendered / k : 0);
    return 0;
}
