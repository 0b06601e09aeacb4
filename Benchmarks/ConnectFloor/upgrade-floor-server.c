// The least a WebSocket server can spend per upgrade on this machine, for comparing
// `Scripts/bench-handshake-split` storms in one sitting (the machine's speed moves by a
// quarter between sittings): one thread, epoll, level-triggered; it accepts every pending
// connection (TCP_NODELAY on each, as uWebSockets sets it), reads one request, answers the
// 101 with its Sec-WebSocket-Accept (OpenSSL's SHA-1 and base64) and keeps the connection
// open until the client closes it. No routing, no limits, no session, no allocation: what
// is left is the kernel's work and the handshake's own arithmetic.
//   cc -O2 -o upgrade-floor-server upgrade-floor-server.c -lcrypto && ./upgrade-floor-server PORT
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

static const char guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/// Writes the 101 for `request` into `out`; its length, or 0 when the request has no key.
static int answer(const char *request, size_t length, char *out) {
    const char *name = memmem(request, length, "Sec-WebSocket-Key:", 18);
    if (!name) return 0;
    const char *key = name + 18;
    while (key < request + length && *key == ' ') key++;
    const char *end = memchr(key, '\r', request + length - key);
    if (!end || end - key > 64) return 0;
    char joined[128];
    size_t keyLength = (size_t)(end - key);
    memcpy(joined, key, keyLength);
    memcpy(joined + keyLength, guid, sizeof guid - 1);
    unsigned char digest[SHA_DIGEST_LENGTH];
    SHA1((const unsigned char *)joined, keyLength + sizeof guid - 1, digest);
    char accept[32];
    EVP_EncodeBlock((unsigned char *)accept, digest, SHA_DIGEST_LENGTH);
    return sprintf(out, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                        "Sec-WebSocket-Accept: %s\r\n\r\n", accept);
}

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: upgrade-floor-server PORT\n"); return 2; }
    int listener = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    int one = 1;
    setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[1])),
                                  .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (bind(listener, (struct sockaddr *)&address, sizeof address) != 0 || listen(listener, 4096) != 0) {
        perror("listen");
        return 1;
    }
    int epoll = epoll_create1(0);
    struct epoll_event event = {.events = EPOLLIN, .data.fd = listener};
    epoll_ctl(epoll, EPOLL_CTL_ADD, listener, &event);
    struct epoll_event events[256];
    char buffer[4096], response[256];
    for (;;) {
        int count = epoll_wait(epoll, events, 256, -1);
        for (int i = 0; i < count; i++) {
            int fd = events[i].data.fd;
            if (fd == listener) {
                int client;
                while ((client = accept4(listener, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
                    setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                    struct epoll_event watch = {.events = EPOLLIN, .data.fd = client};
                    epoll_ctl(epoll, EPOLL_CTL_ADD, client, &watch);
                }
                continue;
            }
            ssize_t got = recv(fd, buffer, sizeof buffer, 0);
            if (got <= 0) {
                if (got == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) close(fd);
                continue;
            }
            int length = answer(buffer, (size_t)got, response);
            if (length > 0) send(fd, response, (size_t)length, MSG_NOSIGNAL);
        }
    }
}
