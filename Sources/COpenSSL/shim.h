// OpenSSL for Swift (Debian: libssl-dev). Function-like macros that Swift cannot
// import are re-exposed as static inline functions.
#ifndef SCROLLSYNC_COPENSSL_SHIM_H
#define SCROLLSYNC_COPENSSL_SHIM_H
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

static inline long scrollsync_SSL_CTX_set_min_proto_version(SSL_CTX *ctx, int version) {
    return SSL_CTX_set_min_proto_version(ctx, version);
}
static inline long scrollsync_SSL_CTX_set_mode(SSL_CTX *ctx, long mode) {
    return SSL_CTX_set_mode(ctx, mode);
}
static inline long scrollsync_SSL_set_tlsext_host_name(SSL *ssl, const char *name) {
    return SSL_set_tlsext_host_name(ssl, name);
}
static inline uint64_t scrollsync_SSL_CTX_set_options(SSL_CTX *ctx, uint64_t options) {
    return SSL_CTX_set_options(ctx, options);
}
static inline long scrollsync_SSL_CTX_clear_chain_certs(SSL_CTX *ctx) {
    return SSL_CTX_clear_chain_certs(ctx);
}
static inline long scrollsync_SSL_CTX_add0_chain_cert(SSL_CTX *ctx, X509 *certificate) {
    return SSL_CTX_add0_chain_cert(ctx, certificate);
}
static inline uint64_t scrollsync_SSL_OP_CIPHER_SERVER_PREFERENCE(void) { return SSL_OP_CIPHER_SERVER_PREFERENCE; }
static inline uint64_t scrollsync_SSL_OP_NO_RENEGOTIATION(void) { return SSL_OP_NO_RENEGOTIATION; }
/// SHA-1 of `count` bytes into `digest` (20 bytes) through the low-level calls, which run
/// the CPU's SHA instructions where it has them. `SHA1()` itself fetches the algorithm by
/// name on each call in OpenSSL 3 (about 0.8 µs here against 0.16); the low-level calls are
/// deprecated for new protocols, and this one is only for `Sec-WebSocket-Accept`.
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wdeprecated-declarations"
static inline void scrollsync_sha1(const void *data, size_t count, unsigned char *digest) {
    SHA_CTX context;
    SHA1_Init(&context);
    SHA1_Update(&context, data, count);
    SHA1_Final(digest, &context);
}
#pragma clang diagnostic pop
#endif
