/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * recvbuf.c: out-of-order reassembly of one byte stream (recvbuf.h).
 *
 * Offsets are absolute stream offsets. got holds every range received
 * since offset 0, merged, so its first range is [0, contiguous end) once
 * the stream start has arrived and the set's size is the hole count.
 */
#include "dataplane/engine/recvbuf.h"
#include "dataplane/engine/errors.h"
#include "dataplane/engine/varint.h"

#include <errno.h>
#include <string.h>

static void
init_common(struct dpq_recvbuf *rb, const struct dpq_mem *mem)
{
	dpq_chunkbuf_init(&rb->data, mem);
	dpq_byterange_init(&rb->got, mem, DPQ_RECVBUF_MAX_RANGES);
	rb->read_off = 0;
	rb->max_recv = 0;
	rb->final_size = DPQ_RECVBUF_NO_FINAL;
	rb->limit = 0;
	rb->rel_window = 0;
	rb->limit_error = DPQ_TE_FLOW_CONTROL_ERROR;
	rb->discarding = false;
}

void
dpq_recvbuf_init(struct dpq_recvbuf *rb, const struct dpq_mem *mem,
		uint64_t limit)
{
	init_common(rb, mem);
	rb->limit = limit;
}

void
dpq_recvbuf_init_crypto(struct dpq_recvbuf *rb, const struct dpq_mem *mem)
{
	init_common(rb, mem);
	rb->rel_window = DPQ_RECVBUF_CRYPTO_MAX;
	rb->limit_error = DPQ_TE_CRYPTO_BUFFER_EXCEEDED;
}

void
dpq_recvbuf_free(struct dpq_recvbuf *rb)
{
	dpq_chunkbuf_free(&rb->data);
	dpq_byterange_free(&rb->got);
}

void
dpq_recvbuf_set_limit(struct dpq_recvbuf *rb, uint64_t limit)
{
	if (limit > rb->limit)
		rb->limit = limit;
}

static uint64_t
cur_limit(const struct dpq_recvbuf *rb)
{
	return rb->rel_window ? rb->read_off + rb->rel_window : rb->limit;
}

int
dpq_recvbuf_check(const struct dpq_recvbuf *rb, uint64_t off, size_t len,
		bool fin)
{
	uint64_t end;

	/* §19.8: offset + length cannot exceed 2^62 - 1. */
	if (off > DPQ_VARINT_MAX || len > DPQ_VARINT_MAX - off)
		return DPQ_TE_ERR(DPQ_TE_FLOW_CONTROL_ERROR);
	end = off + len;
	/* §4.5: once the final size is known it cannot change, and no
	 * data may lie beyond it. */
	if (rb->final_size != DPQ_RECVBUF_NO_FINAL) {
		if (end > rb->final_size)
			return DPQ_TE_ERR(DPQ_TE_FINAL_SIZE_ERROR);
		if (fin && end != rb->final_size)
			return DPQ_TE_ERR(DPQ_TE_FINAL_SIZE_ERROR);
	} else if (fin && end < rb->max_recv) {
		/* §4.5: a final size below data already received. */
		return DPQ_TE_ERR(DPQ_TE_FINAL_SIZE_ERROR);
	}
	if (end > cur_limit(rb))
		return DPQ_TE_ERR(rb->limit_error);
	return 0;
}

int
dpq_recvbuf_insert(struct dpq_recvbuf *rb, uint64_t off, const uint8_t *data,
		size_t len, bool fin)
{
	uint64_t end, cur, gs, ge;
	int rc;

	rc = dpq_recvbuf_check(rb, off, len, fin);
	if (rc != 0)
		return rc;
	end = off + len;
	/* Bytes below the read offset were delivered: skip them. */
	cur = off < rb->read_off ? rb->read_off : off;
	if (rb->discarding) {
		/* Data is thrown away but still counts (§3.5, §4.5). */
		cur = end;
		if (end > rb->read_off)
			rb->read_off = end;
	}
	if (cur < end) {
		/* Copy first, record after: a failed copy records nothing
		 * (bytes copied into holes are simply written again). */
		if (!dpq_byterange_contains(&rb->got, cur, end)) {
			uint64_t walk = cur;

			/* Copy only the holes: first copy of a byte wins. */
			while (dpq_byterange_next_gap(&rb->got, &walk, end,
					&gs, &ge)) {
				rc = dpq_chunkbuf_write(&rb->data, gs,
						data + (gs - off),
						(size_t)(ge - gs));
				if (rc != 0)
					return rc;
			}
			rc = dpq_byterange_add(&rb->got, cur, end);
			if (rc != 0)
				return rc;
		}
	}
	if (end > rb->max_recv)
		rb->max_recv = end;
	if (fin)
		rb->final_size = end;
	return 0;
}

/* End of the bytes contiguous from offset 0. */
static uint64_t
contig_end(const struct dpq_recvbuf *rb)
{
	const struct dpq_byterange *r = dpq_byterange_first(&rb->got);

	if (r != NULL && r->start <= rb->read_off)
		return r->end;
	return rb->read_off;
}

uint64_t
dpq_recvbuf_readable(const struct dpq_recvbuf *rb)
{
	uint64_t e = contig_end(rb);

	return e > rb->read_off ? e - rb->read_off : 0;
}

size_t
dpq_recvbuf_peek(const struct dpq_recvbuf *rb, const uint8_t **p)
{
	uint64_t avail = dpq_recvbuf_readable(rb);
	size_t n;

	*p = NULL;
	if (avail == 0)
		return 0;
	*p = dpq_chunkbuf_peek(&rb->data, rb->read_off, &n);
	if (*p == NULL)
		return 0;
	return n < avail ? n : (size_t)avail;
}

void
dpq_recvbuf_consume(struct dpq_recvbuf *rb, uint64_t n)
{
	uint64_t avail = dpq_recvbuf_readable(rb);

	if (n > avail)
		n = avail;
	rb->read_off += n;
	dpq_chunkbuf_release(&rb->data, rb->read_off);
}

size_t
dpq_recvbuf_read(struct dpq_recvbuf *rb, uint8_t *dst, size_t len)
{
	size_t done = 0;

	while (done < len) {
		const uint8_t *p;
		size_t n = dpq_recvbuf_peek(rb, &p);

		if (n == 0)
			break;
		if (n > len - done)
			n = len - done;
		memcpy(dst + done, p, n);
		dpq_recvbuf_consume(rb, n);
		done += n;
	}
	return done;
}

bool
dpq_recvbuf_all_received(const struct dpq_recvbuf *rb)
{
	if (rb->final_size == DPQ_RECVBUF_NO_FINAL)
		return false;
	return rb->final_size == 0 || contig_end(rb) >= rb->final_size ||
	    rb->read_off >= rb->final_size;
}

bool
dpq_recvbuf_all_read(const struct dpq_recvbuf *rb)
{
	return rb->final_size != DPQ_RECVBUF_NO_FINAL &&
	    rb->read_off >= rb->final_size;
}

int
dpq_recvbuf_reset_check(const struct dpq_recvbuf *rb, uint64_t final_size)
{
	if (final_size > DPQ_VARINT_MAX)
		return DPQ_TE_ERR(DPQ_TE_FLOW_CONTROL_ERROR);
	if (rb->final_size != DPQ_RECVBUF_NO_FINAL)
		return final_size != rb->final_size ?
		    DPQ_TE_ERR(DPQ_TE_FINAL_SIZE_ERROR) : 0;
	if (final_size < rb->max_recv)
		return DPQ_TE_ERR(DPQ_TE_FINAL_SIZE_ERROR);
	if (final_size > cur_limit(rb))
		return DPQ_TE_ERR(rb->limit_error);
	return 0;
}

int
dpq_recvbuf_reset(struct dpq_recvbuf *rb, uint64_t final_size)
{
	int rc = dpq_recvbuf_reset_check(rb, final_size);

	if (rc != 0 || rb->final_size != DPQ_RECVBUF_NO_FINAL)
		return rc;
	rb->final_size = final_size;
	rb->max_recv = final_size;
	return 0;
}

void
dpq_recvbuf_discard(struct dpq_recvbuf *rb)
{
	dpq_chunkbuf_free(&rb->data);
	dpq_byterange_free(&rb->got);
	/* Nothing more is readable: pretend all received was read. */
	if (rb->read_off < rb->max_recv)
		rb->read_off = rb->max_recv;
	dpq_chunkbuf_init(&rb->data, rb->data.mem);
	rb->data.base = rb->read_off / DPQ_CHUNKBUF_SIZE;
	rb->discarding = true;
}
