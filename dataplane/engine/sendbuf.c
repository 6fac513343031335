/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sendbuf.c: outgoing bytes of one stream until acknowledged (sendbuf.h).
 */
#include "dataplane/engine/sendbuf.h"
#include "dataplane/engine/varint.h"

#include <errno.h>
#include <limits.h>

void
dpq_sendbuf_init(struct dpq_sendbuf *sb, const struct dpq_mem *mem,
		uint64_t max_buffered)
{
	dpq_chunkbuf_init(&sb->data, mem);
	dpq_byterange_init(&sb->acked, mem, DPQ_SENDBUF_MAX_RANGES);
	dpq_byterange_init(&sb->lost, mem, DPQ_SENDBUF_MAX_RANGES);
	sb->acked_off = 0;
	sb->sent_off = 0;
	sb->write_off = 0;
	sb->max_buffered = max_buffered;
	sb->fin = false;
	sb->fin_sent = false;
	sb->fin_lost = false;
	sb->fin_acked = false;
	sb->discarded = false;
}

void
dpq_sendbuf_free(struct dpq_sendbuf *sb)
{
	dpq_chunkbuf_free(&sb->data);
	dpq_byterange_free(&sb->acked);
	dpq_byterange_free(&sb->lost);
}

uint64_t
dpq_sendbuf_room(const struct dpq_sendbuf *sb)
{
	uint64_t held = sb->write_off - sb->acked_off;

	return held < sb->max_buffered ? sb->max_buffered - held : 0;
}

ssize_t
dpq_sendbuf_append(struct dpq_sendbuf *sb, const uint8_t *data, size_t len,
		bool fin)
{
	uint64_t room = dpq_sendbuf_room(sb);
	size_t n = len;
	int rc;

	if (sb->fin || sb->discarded)
		return -EPIPE;
	if (len > DPQ_VARINT_MAX - sb->write_off)
		return -EFBIG;
	if (n > room)
		n = (size_t)room;
	if (n > SSIZE_MAX)
		n = SSIZE_MAX;
	if (n > 0) {
		rc = dpq_chunkbuf_write(&sb->data, sb->write_off, data, n);
		if (rc != 0)
			return rc;
		sb->write_off += n;
	}
	/* Close only when every byte of this call was taken. */
	if (fin && n == len)
		sb->fin = true;
	return (ssize_t)n;
}

bool
dpq_sendbuf_next(const struct dpq_sendbuf *sb, uint64_t new_limit,
		uint64_t max_len, uint64_t *off, uint64_t *len, bool *fin)
{
	const struct dpq_byterange *r = dpq_byterange_first(&sb->lost);
	uint64_t lim;

	if (sb->discarded)
		return false;
	if (r != NULL) {
		/* RFC 9000 §13.3: lost data goes again before new data. */
		*off = r->start;
		*len = r->end - r->start;
		if (*len > max_len)
			*len = max_len;
		*fin = sb->fin && sb->fin_lost && *off + *len == sb->write_off;
		return *len > 0 || *fin;
	}
	if (sb->fin_lost) {
		/* Only the FIN was lost (all its data is acknowledged or
		 * queued above): resend it alone at the final size. */
		*off = sb->write_off;
		*len = 0;
		*fin = true;
		return true;
	}
	lim = sb->write_off < new_limit ? sb->write_off : new_limit;
	*off = sb->sent_off;
	*len = lim > sb->sent_off ? lim - sb->sent_off : 0;
	if (*len > max_len)
		*len = max_len;
	*fin = sb->fin && !sb->fin_sent && *off + *len == sb->write_off;
	return *len > 0 || *fin;
}

void
dpq_sendbuf_copy(const struct dpq_sendbuf *sb, uint64_t off, uint8_t *dst,
		size_t len)
{
	dpq_chunkbuf_copy(&sb->data, off, dst, len);
}

int
dpq_sendbuf_on_sent(struct dpq_sendbuf *sb, uint64_t off, uint64_t len,
		bool fin)
{
	uint64_t end = off + len;
	int rc;

	rc = dpq_byterange_remove(&sb->lost, off, end);
	if (rc != 0)
		return rc;
	if (end > sb->sent_off)
		sb->sent_off = end;
	if (fin) {
		sb->fin_sent = true;
		sb->fin_lost = false;
	}
	return 0;
}

int
dpq_sendbuf_on_acked(struct dpq_sendbuf *sb, uint64_t off, uint64_t len,
		bool fin)
{
	uint64_t end = off + len;
	const struct dpq_byterange *r;
	int rc;

	if (fin && sb->fin) {
		sb->fin_acked = true;
		sb->fin_lost = false;
	}
	if (end <= sb->acked_off)
		return 0;
	if (off < sb->acked_off)
		off = sb->acked_off;
	rc = dpq_byterange_remove(&sb->lost, off, end);
	if (rc != 0)
		return rc;
	if (off > sb->acked_off)
		return dpq_byterange_add(&sb->acked, off, end);
	/* The prefix moves: swallow the acknowledged ranges it reaches. */
	sb->acked_off = end;
	while ((r = dpq_byterange_first(&sb->acked)) != NULL &&
	    r->start <= sb->acked_off) {
		if (r->end > sb->acked_off)
			sb->acked_off = r->end;
		/* Removing the first range never splits: cannot fail. */
		(void)dpq_byterange_remove(&sb->acked, r->start, r->end);
	}
	/* Lost ranges never hold acknowledged bytes; nothing to trim. */
	dpq_chunkbuf_release(&sb->data, sb->acked_off);
	return 0;
}

int
dpq_sendbuf_on_lost(struct dpq_sendbuf *sb, uint64_t off, uint64_t len,
		bool fin)
{
	uint64_t end = off + len, cur, gs, ge;
	int rc;

	if (sb->discarded)
		return 0;
	if (fin && sb->fin && !sb->fin_acked)
		sb->fin_lost = true;
	if (end > sb->sent_off)
		end = sb->sent_off;	/* never sent: nothing to resend */
	cur = off < sb->acked_off ? sb->acked_off : off;
	while (dpq_byterange_next_gap(&sb->acked, &cur, end, &gs, &ge)) {
		rc = dpq_byterange_add(&sb->lost, gs, ge);
		if (rc != 0)
			return rc;
	}
	return 0;
}

bool
dpq_sendbuf_pending(const struct dpq_sendbuf *sb)
{
	if (sb->discarded)
		return false;
	return !dpq_byterange_empty(&sb->lost) || sb->fin_lost ||
	    sb->sent_off < sb->write_off || (sb->fin && !sb->fin_sent);
}

bool
dpq_sendbuf_all_acked(const struct dpq_sendbuf *sb)
{
	return sb->fin && sb->fin_acked && sb->acked_off == sb->write_off;
}

bool
dpq_sendbuf_all_sent(const struct dpq_sendbuf *sb)
{
	return sb->fin && sb->fin_sent && sb->sent_off == sb->write_off;
}

void
dpq_sendbuf_discard(struct dpq_sendbuf *sb)
{
	dpq_chunkbuf_free(&sb->data);
	dpq_byterange_free(&sb->acked);
	dpq_byterange_free(&sb->lost);
	dpq_chunkbuf_init(&sb->data, sb->data.mem);
	sb->fin_lost = false;
	sb->discarded = true;
	/* Unsent bytes are forgotten: the final size a RESET_STREAM
	 * announces is what was sent (§4.5, §19.4). */
	sb->write_off = sb->sent_off;
	sb->acked_off = sb->sent_off;
	sb->data.base = sb->sent_off / DPQ_CHUNKBUF_SIZE;
}
