/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Our connection IDs (RFC 9000 §5.1): sequence 0 is the SCID of the
 * handshake; once the handshake is confirmed more are issued in
 * NEW_CONNECTION_ID frames, up to the peer's active_connection_id_limit,
 * so that it has a fresh one for each new path (§9.5); each one the peer
 * retires (RETIRE_CONNECTION_ID, §19.16) is replaced. The owner makes
 * them and routes them (struct dpq_cid_ops). Also the bookkeeping of the
 * peer's CIDs we retire (§5.1.2). Shard only.
 */
#include <errno.h>
#include <string.h>

#include "dataplane/engine/errors.h"
#include "dataplane/quic/conn_int.h"

void
dpq_conn_cids_init(struct dpq_conn *c, const struct dpq_conn_init *in)
{
	struct dpq_local_cid *l = &c->local_cids[0];

	memset(c->local_cids, 0, sizeof(c->local_cids));
	c->cid_ops = in->cid_ops;
	c->cid_arg = in->cid_arg;
	l->cid = in->scid;
	l->seq = 0;
	l->used = in->scid.len > 0;
	/* A server's token for sequence 0 travels in its transport
	 * parameters (§18.2); a client has none for it. */
	if (c->role == DPQ_ROLE_SERVER)
		memcpy(l->reset_token, in->reset_token, DPQ_RESET_TOKEN_LEN);
	c->next_local_seq = 1;
}

static unsigned int
active_limit(const struct dpq_conn *c)
{
	/* §18.2: absent means 2; we keep at most DPQ_CONN_LOCAL_CIDS. */
	uint64_t lim = c->peer_tp_set ?
		c->b->peer_tp.active_connection_id_limit : 2;

	if (lim < 2)
		lim = 2;
	return lim < DPQ_CONN_LOCAL_CIDS ? (unsigned int)lim :
		DPQ_CONN_LOCAL_CIDS;
}

void
dpq_conn_cids_replenish(struct dpq_conn *c)
{
	unsigned int i, active = 0, lim;

	/* §5.1.1: an endpoint with a zero-length CID cannot issue more;
	 * none before the handshake is confirmed (§9: nobody migrates
	 * before), nor while closing. */
	if (c->cid_ops == NULL || c->cid_ops->issue == NULL ||
	    c->scid.len == 0 || !c->hs_confirmed || dpq_conn_is_closing(c))
		return;
	lim = active_limit(c);
	for (i = 0; i < DPQ_CONN_LOCAL_CIDS; i++)
		active += c->local_cids[i].used;
	for (i = 0; i < DPQ_CONN_LOCAL_CIDS && active < lim; i++) {
		struct dpq_local_cid *l = &c->local_cids[i];

		if (l->used)
			continue;
		memset(l, 0, sizeof(*l));
		if (c->cid_ops->issue(c->cid_arg, c, &l->cid,
				l->reset_token) != 0)
			return;	/* the owner has none to give: fine */
		l->seq = c->next_local_seq++;
		l->used = true;
		l->announce = true;
		active++;
		c->b->stats.cids_issued++;
		dpq_conn_wake(c);
	}
}

int
dpq_conn_cid_on_retire(struct dpq_conn *c, uint64_t seq)
{
	unsigned int i;

	/* §19.16: a sequence number never sent, or the CID this very
	 * packet was sent to, is a PROTOCOL_VIOLATION. */
	if (seq >= c->next_local_seq) {
		dpq_conn_close_transport(c, DPQ_TE_PROTOCOL_VIOLATION,
				DPQ_FT_RETIRE_CONNECTION_ID,
				"RETIRE of an unissued CID");
		return DPQ_TE_ERR(DPQ_TE_PROTOCOL_VIOLATION);
	}
	for (i = 0; i < DPQ_CONN_LOCAL_CIDS; i++) {
		struct dpq_local_cid *l = &c->local_cids[i];

		if (!l->used || l->seq != seq)
			continue;
		if (dpq_cid_eq(&l->cid, &c->rx_pkt_dcid)) {
			dpq_conn_close_transport(c, DPQ_TE_PROTOCOL_VIOLATION,
					DPQ_FT_RETIRE_CONNECTION_ID,
					"RETIRE of the CID in use");
			return DPQ_TE_ERR(DPQ_TE_PROTOCOL_VIOLATION);
		}
		l->used = false;
		l->announce = false;
		c->b->stats.cids_retired++;
		if (c->cid_ops != NULL && c->cid_ops->retire != NULL)
			c->cid_ops->retire(c->cid_arg, c, &l->cid);
		/* §5.1.1: an endpoint SHOULD supply a replacement. */
		dpq_conn_cids_replenish(c);
		return 0;
	}
	return 0;	/* retired before: a retransmission */
}

bool
dpq_conn_retire_push(struct dpq_conn *c, uint64_t seq)
{
	unsigned int i;

	for (i = 0; i < c->n_retire_pending; i++)
		if (c->retire_pending[i] == seq)
			return true;
	if (c->n_retire_pending >= sizeof(c->retire_pending) /
			sizeof(c->retire_pending[0])) {
		/* §5.1.2: never forget a CID without retiring it; too many
		 * to track may be a CONNECTION_ID_LIMIT_ERROR. */
		dpq_conn_close_transport(c, DPQ_TE_CONNECTION_ID_LIMIT_ERROR,
				DPQ_FT_NEW_CONNECTION_ID,
				"too many connection IDs to retire");
		return false;
	}
	c->retire_pending[c->n_retire_pending++] = seq;
	dpq_conn_wake(c);
	return true;
}

bool
dpq_conn_cids_announce_pending(const struct dpq_conn *c)
{
	unsigned int i;

	for (i = 0; i < DPQ_CONN_LOCAL_CIDS; i++)
		if (c->local_cids[i].used && c->local_cids[i].announce)
			return true;
	return false;
}

void
dpq_conn_cid_on_lost(struct dpq_conn *c, uint64_t seq)
{
	unsigned int i;

	/* §13.3: sent again unless retired since. */
	for (i = 0; i < DPQ_CONN_LOCAL_CIDS; i++)
		if (c->local_cids[i].used && c->local_cids[i].seq == seq)
			c->local_cids[i].announce = true;
}
