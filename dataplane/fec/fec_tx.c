/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fec_tx.c: the sender side of XOR-FEC (docs/fec.md §6). Build time only
 * counts: which packets are members, their longest payload and the XOR
 * of their lengths, so the REPAIR frame's header and size are known when
 * the builder places it right after the group's last member. The bytes
 * are XORed later, once per burst (dpq_fec_tx_pass), over the plaintexts
 * just before they are sealed.
 */
#include <errno.h>
#include <string.h>

#include "dataplane/fec/fec.h"
#include "dataplane/fec/xor.h"

void
dpq_fec_tx_init(struct dpq_fec_tx *tx, const struct dpq_mem *mem, size_t cap)
{
	memset(tx, 0, sizeof(*tx));
	tx->mem = *mem;
	tx->cap = cap < DPQ_FEC_PAYLOAD_LIMIT ? cap : DPQ_FEC_PAYLOAD_LIMIT;
	tx->frame_pn = UINT64_MAX;
}

void
dpq_fec_tx_destroy(struct dpq_fec_tx *tx)
{
	dpq_mem_free(&tx->mem, tx->acc);
	tx->acc = NULL;
	tx->state = DPQ_FEC_TX_IDLE;
}

int
dpq_fec_tx_want(struct dpq_fec_tx *tx, uint32_t k)
{
	if (k > DPQ_FEC_GROUP_LIMIT)
		k = DPQ_FEC_GROUP_LIMIT;
	if (tx->state == DPQ_FEC_TX_IDLE && k > 0) {
		if (tx->acc == NULL) {
			tx->acc = dpq_mem_alloc(&tx->mem, tx->cap);
			if (tx->acc == NULL)
				return -ENOMEM;
			memset(tx->acc, 0, tx->cap);
		}
		tx->state = DPQ_FEC_TX_ANNOUNCE;
	} else if (tx->state == DPQ_FEC_TX_ANNOUNCE && k == 0) {
		tx->state = DPQ_FEC_TX_IDLE;	/* nothing announced yet */
	}
	return 0;
}

static void
open_group(struct dpq_fec_tx *tx, uint64_t first, uint32_t k)
{
	tx->first_pn = first;
	tx->size = k;
	tx->count = 0;
	tx->max_len = 0;
	tx->len_xor = 0;
	tx->eliciting = false;
	tx->state = k > 0 ? DPQ_FEC_TX_OPEN : DPQ_FEC_TX_IDLE;
}

uint8_t *
dpq_fec_tx_write_frame(struct dpq_fec_tx *tx, uint8_t *p, const uint8_t *end,
		uint64_t pn, uint32_t next_k, uint8_t **data,
		uint16_t *data_len)
{
	struct dpq_fec_repair r = { 0 };
	uint8_t *q;

	if (!dpq_fec_tx_frame_due(tx))
		return NULL;
	if (next_k > DPQ_FEC_GROUP_LIMIT)
		next_k = DPQ_FEC_GROUP_LIMIT;
	if (tx->state == DPQ_FEC_TX_ANNOUNCE) {
		/* Size 0: only the next group, which starts at pn + 1. */
		r.first_pn = pn;
		r.next_delta = 1;
	} else {
		if (pn < tx->first_pn + tx->count)
			return NULL;
		r.first_pn = tx->first_pn;
		r.size = tx->count;
		r.next_delta = pn + 1 - (tx->first_pn + tx->count);
		r.len_xor = tx->len_xor;
		r.data_len = tx->max_len;
	}
	r.next_size = next_k;
	q = dpq_fec_repair_encode_hdr(p, end, &r);
	if (q == NULL)
		return NULL;
	*data = q;
	*data_len = (uint16_t)r.data_len;
	if (tx->state == DPQ_FEC_TX_ANNOUNCE) {
		tx->stats.announces++;
	} else {
		tx->stats.groups++;
		tx->stats.members += tx->count;
		if (tx->count < tx->size)
			tx->stats.early++;
	}
	tx->stats.repair_bytes += (uint64_t)(q - p) + r.data_len;
	tx->frame_pn = pn;
	open_group(tx, pn + 1, next_k);
	return q + r.data_len;
}

void
dpq_fec_tx_begin_packet(struct dpq_fec_tx *tx, uint64_t pn)
{
	if (tx->state != DPQ_FEC_TX_OPEN || pn == tx->first_pn + tx->count)
		return;
	if (tx->count > 0) {
		tx->state = DPQ_FEC_TX_REPAIR_DUE;
	} else {
		/* Nothing sent in the announced range yet: announce the
		 * group again, starting after this packet. */
		tx->state = DPQ_FEC_TX_ANNOUNCE;
	}
}

bool
dpq_fec_tx_on_packet(struct dpq_fec_tx *tx, uint64_t pn, size_t len,
		bool ack_eliciting)
{
	if (pn == tx->frame_pn || tx->state != DPQ_FEC_TX_OPEN)
		return false;
	if (pn != tx->first_pn + tx->count || len > tx->cap || len == 0) {
		/* The builder broke the contract (begin_packet not called,
		 * or a payload past cap): end the group; the receiver will
		 * find it inconsistent and rebuild nothing, never garbage. */
		tx->state = tx->count > 0 ? DPQ_FEC_TX_REPAIR_DUE :
			DPQ_FEC_TX_ANNOUNCE;
		return false;
	}
	tx->count++;
	if (len > tx->max_len)
		tx->max_len = (uint32_t)len;
	tx->len_xor ^= (uint32_t)len;
	tx->eliciting |= ack_eliciting;
	if (tx->count == tx->size)
		tx->state = DPQ_FEC_TX_REPAIR_DUE;
	return true;
}

bool
dpq_fec_tx_close(struct dpq_fec_tx *tx)
{
	if (tx->state != DPQ_FEC_TX_OPEN || tx->count == 0 || !tx->eliciting)
		return false;
	tx->state = DPQ_FEC_TX_REPAIR_DUE;
	return true;
}

void
dpq_fec_tx_pass(struct dpq_fec_tx *tx, const struct dpq_fec_seg *segs,
		unsigned int n)
{
	const uint8_t *src[DPQ_FEC_GROUP_LIMIT];
	uint16_t len[DPQ_FEC_GROUP_LIMIT];
	unsigned int i, m = 0;

	if (tx->acc == NULL)
		return;
	for (i = 0; i < n; i++) {
		if (segs[i].repair == NULL) {
			src[m] = segs[i].payload;
			len[m] = segs[i].len;
			/* A group has at most DPQ_FEC_GROUP_LIMIT members;
			 * flush early anyway if a caller passes more. */
			if (++m == DPQ_FEC_GROUP_LIMIT) {
				dpq_xor_burst(tx->acc, src, len, m);
				m = 0;
			}
			continue;
		}
		/* A REPAIR's data: the group's XOR, then a clean slate.
		 * No member was longer than the data, so zeroing it
		 * zeroes the whole accumulator. */
		dpq_xor_burst(tx->acc, src, len, m);
		m = 0;
		if (segs[i].len > 0) {
			memcpy(segs[i].repair, tx->acc, segs[i].len);
			memset(tx->acc, 0, segs[i].len);
		}
	}
	dpq_xor_burst(tx->acc, src, len, m);
}
