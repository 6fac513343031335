/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Frames (RFC 9000 §12.4, §19): decode a payload frame by frame; every
 * frame that decodes must encode, the encoding must decode to the same
 * frame (encode(decode(x)) is a fixed point) and take exactly its bytes,
 * and the frame-table predicates and ACK range walk must hold up.
 */
#include "dataplane/engine/frame.h"
#include "dataplane/engine/loss.h"
#include "dataplane/engine/packet.h"
#include "fuzz.h"

static size_t
encode(const struct dpq_frame *f, uint8_t *buf, size_t cap)
{
	uint8_t *e = dpq_frame_encode(buf, buf + cap, f);

	FUZZ_CHECK(e != NULL);
	return (size_t)(e - buf);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t a[70000], b[70000];
	const uint8_t *p = data, *end = data + size;

	while (p < end) {
		struct dpq_frame f, g;
		struct dpq_ack_range r[DPQ_LOSS_MAX_ACK_RANGES];
		ssize_t n = dpq_frame_decode(p, end, &f);
		size_t la, lb;
		int t;

		if (n < 0)
			break;
		FUZZ_CHECK(n > 0 && (size_t)n <= (size_t)(end - p));
		for (t = DPQ_PKT_INITIAL; t <= DPQ_PKT_1RTT; t++)
			(void)dpq_frame_allowed(f.type, (enum dpq_pkt_type)t);
		(void)dpq_frame_is_ack_eliciting(f.type);
		(void)dpq_frame_is_probing(f.type);
		if (f.type == DPQ_FT_ACK || f.type == DPQ_FT_ACK_ECN) {
			size_t k, nr = dpq_loss_ack_ranges(&f.ack, r,
					DPQ_LOSS_MAX_ACK_RANGES);

			/* Largest first, disjoint, never below zero. */
			for (k = 0; k < nr; k++) {
				FUZZ_CHECK(r[k].smallest <= r[k].largest);
				if (k > 0)
					FUZZ_CHECK(r[k].largest + 1 <
							r[k - 1].smallest);
			}
		}
		/* A STREAM frame without LEN ran to the end of the payload:
		 * re-encoded, it must still be last. */
		la = encode(&f, a, sizeof(a));
		FUZZ_CHECK(dpq_frame_decode(a, a + la, &g) == (ssize_t)la);
		FUZZ_CHECK(g.type == f.type);
		lb = encode(&g, b, sizeof(b));
		FUZZ_CHECK(la == lb && memcmp(a, b, la) == 0);
		p += n;
	}
	return 0;
}
