/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The receive buffer (out-of-order reassembly, RFC 9000 §2.2, §4.5)
 * against a reference model: a flat array of the bytes of a stream whose
 * content is a function of the offset, a map of what arrived and the
 * final-size rules written out plainly. Operations come from the input:
 * insert (offset, length, FIN), read, reset, discard; after each the
 * readable bytes, the final size and the errors must agree.
 */
#include <errno.h>

#include "dataplane/engine/errors.h"
#include "dataplane/engine/mem.h"
#include "dataplane/engine/recvbuf.h"
#include "fuzz.h"

#define SPAN	(1u << 16)	/* offsets used: limit is below */

static uint8_t
byte_at(uint64_t off)
{
	return (uint8_t)(off * 7 + (off >> 9));
}

struct model {
	uint8_t got[SPAN];
	uint64_t read_off, max_recv, final_size, limit;
	bool discarding;
};

static uint64_t
model_readable(const struct model *m)
{
	uint64_t o = m->read_off;

	if (m->discarding)
		return 0;
	while (o < SPAN && m->got[o])
		o++;
	return o - m->read_off;
}

/* The §4.5 and limit checks of an insert, as the RFC states them. */
static int
model_check(const struct model *m, uint64_t off, uint64_t len, bool fin)
{
	uint64_t end = off + len;

	if (m->final_size != DPQ_RECVBUF_NO_FINAL) {
		if (end > m->final_size || (fin && end != m->final_size))
			return DPQ_TE_ERR(DPQ_TE_FINAL_SIZE_ERROR);
	} else if (fin && end < m->max_recv) {
		return DPQ_TE_ERR(DPQ_TE_FINAL_SIZE_ERROR);
	}
	if (end > m->limit)
		return DPQ_TE_ERR(DPQ_TE_FLOW_CONTROL_ERROR);
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t src[SPAN], out[SPAN];
	static struct model m;
	struct fuzz_in in = { data, data + size };
	const struct dpq_mem libc = DPQ_MEM_LIBC;
	struct dpq_recvbuf rb;
	unsigned int ops = 0;
	uint64_t i;

	if (src[1] == 0)
		for (i = 0; i < SPAN; i++)
			src[i] = byte_at(i);
	memset(&m, 0, sizeof(m));
	m.final_size = DPQ_RECVBUF_NO_FINAL;
	m.limit = SPAN / 2 + fuzz_u16(&in) % (SPAN / 2);
	dpq_recvbuf_init(&rb, &libc, m.limit);
	while (fuzz_left(&in) > 0 && ops++ < 256) {
		uint8_t op = fuzz_u8(&in);
		uint64_t off = fuzz_u16(&in), len = fuzz_u16(&in) % 2048;
		bool fin = (op & 0x80) != 0;
		int rc, want;

		switch (op & 3) {
		case 0:
		case 1:		/* a STREAM frame */
			if (off + len > SPAN)
				break;
			want = model_check(&m, off, len, fin);
			rc = dpq_recvbuf_insert(&rb, off, src + off,
					(size_t)len, fin);
			if (rc == -ENOBUFS || rc == -ENOMEM)
				break;	/* hole limit: nothing recorded */
			FUZZ_CHECK(rc == want);
			if (rc != 0)
				break;
			for (i = off; i < off + len; i++)
				m.got[i] = 1;
			if (off + len > m.max_recv)
				m.max_recv = off + len;
			if (fin)
				m.final_size = off + len;
			if (m.discarding && off + len > m.read_off)
				m.read_off = off + len;
			break;
		case 2: {	/* the application reads */
			size_t n = dpq_recvbuf_read(&rb, out, (size_t)len);

			FUZZ_CHECK(n == (len < model_readable(&m) ?
					len : model_readable(&m)));
			FUZZ_CHECK(memcmp(out, src + m.read_off, n) == 0);
			m.read_off += n;
			break;
		}
		case 3:
			if (op & 0x40) {	/* STOP_SENDING: discard */
				dpq_recvbuf_discard(&rb);
				m.discarding = true;
				if (m.read_off < m.max_recv)
					m.read_off = m.max_recv;
				break;
			}
			/* RESET_STREAM with a final size */
			want = 0;
			if (off > m.limit)
				want = DPQ_TE_ERR(DPQ_TE_FLOW_CONTROL_ERROR);
			if (m.final_size != DPQ_RECVBUF_NO_FINAL)
				want = off != m.final_size ?
					DPQ_TE_ERR(DPQ_TE_FINAL_SIZE_ERROR) : 0;
			else if (off < m.max_recv)
				want = DPQ_TE_ERR(DPQ_TE_FINAL_SIZE_ERROR);
			rc = dpq_recvbuf_reset(&rb, off);
			FUZZ_CHECK(rc == want);
			if (rc == 0 && m.final_size == DPQ_RECVBUF_NO_FINAL) {
				m.final_size = off;
				m.max_recv = off;
			}
			break;
		}
		FUZZ_CHECK(dpq_recvbuf_readable(&rb) == model_readable(&m));
		FUZZ_CHECK(dpq_recvbuf_max_recv(&rb) == m.max_recv);
		FUZZ_CHECK(dpq_recvbuf_final_known(&rb) ==
				(m.final_size != DPQ_RECVBUF_NO_FINAL));
		FUZZ_CHECK(dpq_recvbuf_all_read(&rb) ==
				(m.final_size != DPQ_RECVBUF_NO_FINAL &&
				 m.read_off >= m.final_size));
		/* Memory stays within the span's chunks (+ one). */
		FUZZ_CHECK(dpq_recvbuf_mem(&rb) <= SPAN + DPQ_CHUNKBUF_SIZE);
	}
	dpq_recvbuf_free(&rb);
	return 0;
}
