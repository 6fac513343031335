/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sendbuf.h: the bytes of one outgoing byte stream (a STREAM's send side,
 * or the CRYPTO data of one encryption level) from the time the
 * application writes them until the peer acknowledges them.
 *
 * RFC 9000 §13.3: QUIC retransmits data, not packets. The buffer keeps
 * three offsets and two range sets: everything below acked_off is
 * acknowledged and freed; [acked_off, sent_off) was sent at least once,
 * with the acknowledged parts in `acked` and the parts declared lost (and
 * not acknowledged since) in `lost`; [sent_off, write_off) was never sent.
 * The packet builder asks next() for one range: lost data first (lowest
 * offset first), then new data. Sets hold holes, not packets, so a bulk
 * transfer costs O(log holes) per operation.
 *
 * Memory: chunkbuf chunks from the injected allocator, freed as the
 * acknowledged prefix moves; write_off - acked_off is bounded by the
 * caller's max_buffered.
 */
#ifndef DPQ_ENGINE_SENDBUF_H
#define DPQ_ENGINE_SENDBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "dataplane/engine/byterange.h"
#include "dataplane/engine/chunkbuf.h"

struct dpq_mem;

/* Holes tracked per set; the peer's ACK pattern shapes `acked`. */
#define DPQ_SENDBUF_MAX_RANGES	(1u << 20)

struct dpq_sendbuf {
	struct dpq_chunkbuf data;
	struct dpq_byterange_set acked;	/* acknowledged, above acked_off */
	struct dpq_byterange_set lost;	/* to send again, none acked */
	uint64_t acked_off;
	uint64_t sent_off;
	uint64_t write_off;
	uint64_t max_buffered;		/* bound on write_off - acked_off */
	bool fin;			/* final size = write_off */
	bool fin_sent;
	bool fin_lost;			/* FIN must be sent again */
	bool fin_acked;
	bool discarded;			/* reset: nothing is sent any more */
};

/* Empty buffer; at most max_buffered unacknowledged bytes at a time. */
void dpq_sendbuf_init(struct dpq_sendbuf *sb, const struct dpq_mem *mem,
		uint64_t max_buffered);

/* Free all memory; init again before reuse. */
void dpq_sendbuf_free(struct dpq_sendbuf *sb);

/*
 * Copy up to len bytes in; with fin, mark the end of the stream once all
 * len bytes are in (a call with len 0 and fin only closes). Returns the
 * bytes accepted (fewer when the buffer is full: the rest must be written
 * again later), -EPIPE after FIN or discard(), -EFBIG past 2^62 - 1 (§19.8), or
 * -ENOMEM.
 */
ssize_t dpq_sendbuf_append(struct dpq_sendbuf *sb, const uint8_t *data,
		size_t len, bool fin);

/* Room for more bytes: max_buffered - (write_off - acked_off). */
uint64_t dpq_sendbuf_room(const struct dpq_sendbuf *sb);

/*
 * What to send next: lost ranges first (lowest offset), then new data
 * from sent_off, the latter only below new_limit (the flow-control limit,
 * §4.1; retransmissions are below it already). At most max_len bytes.
 * Returns true with *off and *len (len may be 0 for a FIN alone); *fin is
 * true if a FIN belongs at off + len, which the caller must send only if
 * it sends all len bytes. Returns false when there is nothing to send.
 */
bool dpq_sendbuf_next(const struct dpq_sendbuf *sb, uint64_t new_limit,
		uint64_t max_len, uint64_t *off, uint64_t *len, bool *fin);

/* Copy [off, off + len) (held, not yet acknowledged) into dst. */
void dpq_sendbuf_copy(const struct dpq_sendbuf *sb, uint64_t off,
		uint8_t *dst, size_t len);

/*
 * [off, off + len) (and FIN if fin) went out in a packet. Returns 0 or
 * -ENOMEM (only when an unusual range splits a lost range).
 */
int dpq_sendbuf_on_sent(struct dpq_sendbuf *sb, uint64_t off, uint64_t len,
		bool fin);

/*
 * The packet carrying [off, off + len) (and FIN) was acknowledged: never
 * send it again, free memory below the acknowledged prefix. Returns 0 or
 * -ENOMEM.
 */
int dpq_sendbuf_on_acked(struct dpq_sendbuf *sb, uint64_t off, uint64_t len,
		bool fin);

/*
 * The packet carrying [off, off + len) (and FIN) was declared lost: queue
 * the parts not acknowledged meanwhile for retransmission. Returns 0 or
 * -ENOMEM.
 */
int dpq_sendbuf_on_lost(struct dpq_sendbuf *sb, uint64_t off, uint64_t len,
		bool fin);

/* Anything to send (lost data, new data, a FIN)? Ignores flow control. */
bool dpq_sendbuf_pending(const struct dpq_sendbuf *sb);

/* FIN written and every byte and the FIN acknowledged (§3.1 Data Recvd). */
bool dpq_sendbuf_all_acked(const struct dpq_sendbuf *sb);

/* FIN written and everything sent at least once (§3.1 Data Sent). */
bool dpq_sendbuf_all_sent(const struct dpq_sendbuf *sb);

/* Drop everything (RESET_STREAM, §3.1): frees memory, nothing is sent
 * again; write_off falls back to sent_off, the final size to announce. */
void dpq_sendbuf_discard(struct dpq_sendbuf *sb);

/* Bytes of chunk memory held. */
static inline size_t
dpq_sendbuf_mem(const struct dpq_sendbuf *sb)
{
	return dpq_chunkbuf_mem(&sb->data);
}

#endif /* DPQ_ENGINE_SENDBUF_H */
