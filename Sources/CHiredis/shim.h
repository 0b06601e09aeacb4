// hiredis for Swift (Debian: libhiredis-dev), driven through its async API from our own
// event loop. The hooks below let Swift install the loop's read/write watchers.
#ifndef SCROLLSYNC_CHIREDIS_SHIM_H
#define SCROLLSYNC_CHIREDIS_SHIM_H
#include <hiredis/hiredis.h>
#include <hiredis/async.h>

typedef void (*scrollsync_redis_hook)(void *privdata);

static inline void scrollsync_redis_attach(redisAsyncContext *ac, void *data,
        scrollsync_redis_hook addRead, scrollsync_redis_hook delRead,
        scrollsync_redis_hook addWrite, scrollsync_redis_hook delWrite,
        scrollsync_redis_hook cleanup) {
    ac->ev.data = data;
    ac->ev.addRead = addRead;
    ac->ev.delRead = delRead;
    ac->ev.addWrite = addWrite;
    ac->ev.delWrite = delWrite;
    ac->ev.cleanup = cleanup;
}

static inline int scrollsync_redis_fd(const redisAsyncContext *ac) { return ac->c.fd; }
#endif
