/* stream.h - cache-bypassing copy for copy-engine stages (see stream.c). */
#ifndef GDEV_STREAM_H
#define GDEV_STREAM_H

#include <stdint.h>

/* copies below this many bytes are plain memcpy */
#define STREAM_MIN 65536

void gdev_stream_copy(void *dst, const void *src, uint64_t len);

#endif
