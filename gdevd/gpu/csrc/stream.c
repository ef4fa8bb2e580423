/*
 * stream.c - a memcpy whose stores bypass the cache, for the far side of a DMA stage.
 *
 * A copy engine writes data that nobody reads soon (device memory, the caller's host
 * buffer), chunk by chunk.  A plain memcpy of one chunk is below glibc's non-temporal
 * threshold, so it would pull every destination line into the cache first (a read for
 * ownership) and evict the bounce buffer the other stage is about to use.  Streaming
 * stores avoid both; small copies, and targets without SSE2, use memcpy.
 */
#include <stdint.h>
#include <string.h>

#include "stream.h"

#if defined(__SSE2__)
#include <emmintrin.h>

void gdev_stream_copy(void *dst, const void *src, uint64_t len)
{
	uint8_t *d = dst;
	const uint8_t *s = src;
	uint64_t head;

	if (len < STREAM_MIN) {
		memcpy(dst, src, len);
		return;
	}
	head = (16 - ((uintptr_t)d & 15)) & 15;
	memcpy(d, s, head);
	d += head;
	s += head;
	len -= head;
	for (; len >= 64; len -= 64, d += 64, s += 64) {
		__m128i a = _mm_loadu_si128((const __m128i *)s);
		__m128i b = _mm_loadu_si128((const __m128i *)(s + 16));
		__m128i c = _mm_loadu_si128((const __m128i *)(s + 32));
		__m128i e = _mm_loadu_si128((const __m128i *)(s + 48));

		_mm_stream_si128((__m128i *)d, a);
		_mm_stream_si128((__m128i *)(d + 16), b);
		_mm_stream_si128((__m128i *)(d + 32), c);
		_mm_stream_si128((__m128i *)(d + 48), e);
	}
	memcpy(d, s, len);
	_mm_sfence(); /* streaming stores are weakly ordered: publish before signalling */
}
#else
void gdev_stream_copy(void *dst, const void *src, uint64_t len)
{
	memcpy(dst, src, len);
}
#endif
