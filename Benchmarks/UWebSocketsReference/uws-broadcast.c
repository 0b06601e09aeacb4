// uWebSockets' pub/sub broadcast, the reference for issue 30's table, measured on this
// machine in the same sitting as ScrollSync: every connection subscribes to one topic and
// each message is published to it (every connection, the sender too), uncompressed, as
// wsfan's `--mode plain` expects. uWebSockets cannot be built from source here, so this
// program links the build of uWebSockets and uSockets that the socketify package ships
// (0.0.31 on PyPI, `libsocketify_linux_amd64.so`, uSockets on libuv) through its C API,
// whose declarations are repeated below. `Scripts/build-uws-reference` fetches it (pinned
// by SHA-256) and builds this; `REFERENCE=… Scripts/bench-wsfan-table` runs it.
//   uws-broadcast PORT
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

struct us_socket_context_options_t { const char *key_file_name, *cert_file_name, *passphrase, *dh_params_file_name, *ca_file_name, *ssl_ciphers; int ssl_prefer_low_memory_usage; };
typedef struct uws_app_s uws_app_t;
typedef struct uws_req_s uws_req_t;
typedef struct uws_res_s uws_res_t;
typedef struct uws_socket_context_s uws_socket_context_t;
typedef struct uws_websocket_s uws_websocket_t;
struct us_listen_socket_t;
typedef int uws_opcode_t;
typedef struct { int port; const char *host; int options; } uws_app_listen_config_t;
typedef struct {
    int compression;
    unsigned int maxPayloadLength;
    unsigned short idleTimeout;
    unsigned int maxBackpressure;
    bool closeOnBackpressureLimit, resetIdleTimeoutOnSend, sendPingsAutomatically;
    unsigned short maxLifetime;
    void (*upgrade)(uws_res_t *, uws_req_t *, uws_socket_context_t *, void *);
    void (*open)(uws_websocket_t *, void *);
    void (*message)(uws_websocket_t *, const char *, size_t, uws_opcode_t, void *);
    void (*drain)(uws_websocket_t *, void *);
    void (*ping)(uws_websocket_t *, const char *, size_t, void *);
    void (*pong)(uws_websocket_t *, const char *, size_t, void *);
    void (*close)(uws_websocket_t *, int, const char *, size_t, void *);
    void (*subscription)(uws_websocket_t *, const char *, size_t, int, int, void *);
} uws_socket_behavior_t;
struct us_loop_t *uws_get_loop(void);
uws_app_t *uws_create_app(int ssl, struct us_socket_context_options_t options);
void uws_ws(int ssl, uws_app_t *app, const char *pattern, uws_socket_behavior_t behavior, void *user_data);
void uws_app_listen(int ssl, uws_app_t *app, int port, void (*handler)(struct us_listen_socket_t *, uws_app_listen_config_t, void *), void *user_data);
void uws_app_run(int ssl, uws_app_t *app);
bool uws_ws_subscribe(int ssl, uws_websocket_t *ws, const char *topic, size_t length);
bool uws_publish(int ssl, uws_app_t *app, const char *topic, size_t topic_length, const char *message, size_t message_length, uws_opcode_t opcode, bool compress);

static uws_app_t *app;
static void on_open(uws_websocket_t *ws, void *user) { (void)user; uws_ws_subscribe(0, ws, "bench", 5); }
static void on_message(uws_websocket_t *ws, const char *message, size_t length, uws_opcode_t opcode, void *user) {
    (void)ws; (void)user;
    uws_publish(0, app, "bench", 5, message, length, opcode, false);
}
static void on_listen(struct us_listen_socket_t *socket, uws_app_listen_config_t config, void *user) {
    (void)user;
    if (!socket) { fprintf(stderr, "cannot listen on %d\n", config.port); exit(1); }
    fprintf(stderr, "listening on %d\n", config.port);
}

int main(int argc, char **argv) {
    int port = argc > 1 ? atoi(argv[1]) : 9001;
    uws_get_loop();
    struct us_socket_context_options_t options = {0};
    app = uws_create_app(0, options);
    uws_socket_behavior_t behavior = {0};
    behavior.compression = 0;
    behavior.maxPayloadLength = 16 * 1024;
    behavior.idleTimeout = 0;
    behavior.maxBackpressure = 16 * 1024 * 1024;
    behavior.open = on_open;
    behavior.message = on_message;
    uws_ws(0, app, "/*", behavior, NULL);
    uws_app_listen(0, app, port, on_listen, NULL);
    uws_app_run(0, app);
    return 0;
}
