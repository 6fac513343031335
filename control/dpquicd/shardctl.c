/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Requests from the main lcore to the shards (see struct dpqd_mailbox).
 * A shard owns its connections (DESIGN §2): anything that reads or
 * changes them runs on the shard's lcore, between two polls, never from
 * the control socket's thread.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_malloc.h>

#include "control/dpquicd/dpquicd.h"
#include "control/dpquicd/lcore_wait.h"
#include "dataplane/engine/errors.h"

uint64_t
dpqd_now_us(void)
{
	return dpq_shard_now_us();
}

int
dpqd_shardctl_init(struct dpqd *d)
{
	unsigned int i;

	for (i = 0; i < d->nshards; i++) {
		d->sh[i].mb = rte_zmalloc("dpqd_mailbox", sizeof(*d->sh[i].mb),
				RTE_CACHE_LINE_SIZE);
		if (d->sh[i].mb == NULL)
			return -ENOMEM;
	}
	return 0;
}

void
dpqd_shardctl_fini(struct dpqd *d)
{
	unsigned int i;

	for (i = 0; i < DPQD_MAX_SHARDS; i++) {
		rte_free(d->sh[i].mb);
		d->sh[i].mb = NULL;
	}
}

static void
fill_info(struct dpqd_shard *s, struct dpq_conn *c, uint64_t now,
		struct dpqd_conn_info *ci)
{
	memset(ci, 0, sizeof(*ci));
	ci->handle = dpq_shard_conn_handle(s->shard, c);
	dpq_shard_conn_peer(s->shard, c, &ci->peer);
	ci->scid = *dpq_conn_scid(c);
	ci->dcid = *dpq_conn_dcid(c);
	ci->state = dpq_conn_state(c);
	dpq_conn_get_stats(c, &ci->st);
	ci->age_us = now > ci->st.created_us ? now - ci->st.created_us : 0;
	snprintf(ci->alpn, sizeof(ci->alpn), "%s",
			dpq_conn_alpn(c) ? dpq_conn_alpn(c) : "");
	ci->qlog = dpqd_qlog_traced(s, ci->handle);
}

static void
run(struct dpqd_shard *s, struct dpqd_mailbox *mb)
{
	uint64_t now = dpq_shard_now_us();
	struct dpq_conn *c;
	uint32_t i, n;

	mb->rc = 0;
	mb->n = 0;
	switch (mb->op) {
	case DPQD_OP_CLOSE_ALL:
		/* RFC 9000 §10.2: an immediate close; the connections stay
		 * in closing state (3 PTO) so a lost CONNECTION_CLOSE is
		 * sent again when the peer keeps sending. */
		n = dpq_shard_conn_count(s->shard);
		for (i = 0; i < n; i++) {
			c = dpq_shard_conn_at(s->shard, i);
			if (dpq_conn_state(c) < DPQ_CONN_CLOSING) {
				dpq_conn_close(c, false, mb->code, mb->reason);
				mb->n++;
			}
		}
		break;
	case DPQD_OP_REFUSE:
		if (s->listener != NULL)
			dpq_listener_set_refuse(s->listener, mb->flag,
					mb->reason);
		break;
	case DPQD_OP_RETRY:
		if (s->listener != NULL)
			dpq_listener_set_retry(s->listener,
					(enum dpq_retry_policy)mb->code,
					mb->rate, now);
		break;
	case DPQD_OP_LIST:
		n = dpq_shard_conn_count(s->shard);
		mb->total = n;
		for (i = mb->cursor; i < n && mb->n < DPQD_LIST_MAX; i++)
			fill_info(s, dpq_shard_conn_at(s->shard, i), now,
					&mb->info[mb->n++]);
		break;
	case DPQD_OP_FEC:
		dpq_shard_set_fec(s->shard, mb->conn.fec_max_group,
				&mb->conn.fec, mb->conn.spec_retx,
				mb->conn.spec_spacing_us);
		break;
	case DPQD_OP_FEC_CONN:
		c = dpq_shard_conn_by_handle(s->shard, mb->handle);
		mb->rc = c == NULL ? -ENOENT :
			dpq_conn_set_fec_policy(c, &mb->fec);
		break;
	case DPQD_OP_CLOSE_ONE:
		c = dpq_shard_conn_by_handle(s->shard, mb->handle);
		if (c == NULL) {
			mb->rc = -ENOENT;
		} else if (dpq_conn_state(c) >= DPQ_CONN_CLOSING) {
			mb->rc = -EALREADY;
		} else {
			fill_info(s, c, now, &mb->info[0]);
			dpq_conn_close(c, false, mb->code, mb->reason);
			mb->n = 1;
		}
		break;
	case DPQD_OP_QLOG_ON:
	case DPQD_OP_QLOG_OFF:
		c = dpq_shard_conn_by_handle(s->shard, mb->handle);
		if (c == NULL)
			mb->rc = -ENOENT;
		else if (mb->op == DPQD_OP_QLOG_ON)
			mb->rc = dpqd_qlog_attach(s, c);
		else
			mb->rc = dpqd_qlog_detach(s, c);
		break;
	case DPQD_OP_SYNC:
		/* Served between two polls: the poll before this one built
		 * what the request before asked for, unless the ready list
		 * still holds connections (its per-poll budget). */
		mb->n = dpq_shard_next_event(s->shard) <= now;
		break;
	default:
		mb->rc = -EINVAL;
		break;
	}
}

void
dpqd_shardctl_serve(struct dpqd_shard *s)
{
	struct dpqd_mailbox *mb = s->mb;
	uint32_t seq;

	if (mb == NULL)
		return;
	seq = __atomic_load_n(&mb->seq, __ATOMIC_ACQUIRE);
	if (seq == mb->done)
		return;
	run(s, mb);
	__atomic_store_n(&mb->done, seq, __ATOMIC_RELEASE);
}

int
dpqd_shardctl_call(struct dpqd *d, unsigned int i, int timeout_ms)
{
	struct dpqd_shard *s = &d->sh[i];
	struct dpqd_mailbox *mb = s->mb;
	uint32_t seq = mb->seq + 1;
	pid_t tid = __atomic_load_n(&s->tid, __ATOMIC_ACQUIRE);
	int rc;

	s->why[0] = '\0';
	/* A request that timed out earlier may still be running there:
	 * never rewrite its arguments under it. */
	rc = dpqd_lcore_wait(&mb->done, mb->seq, tid, timeout_ms,
			DPQD_SHARD_WAIT_MAX_MS, s->why, sizeof(s->why));
	if (rc != 0) {
		rte_log(RTE_LOG_WARNING, dpqd_logtype_ctl, "ctl: shard %u "
			"busy with an earlier request: %s\n", i, s->why);
		return -EBUSY;
	}
	__atomic_store_n(&mb->seq, seq, __ATOMIC_RELEASE);
	if (s->on_main) {
		/* This lcore polls that shard itself. */
		dpqd_shardctl_serve(s);
		return mb->rc;
	}
	rc = dpqd_lcore_wait(&mb->done, seq, tid, timeout_ms,
			DPQD_SHARD_WAIT_MAX_MS, s->why, sizeof(s->why));
	if (rc != 0) {
		rte_log(RTE_LOG_WARNING, dpqd_logtype_ctl, "ctl: shard %u: "
			"%s\n", i, s->why);
		return rc;
	}
	return mb->rc;
}

const char *
dpqd_shardctl_strerror(struct dpqd *d, unsigned int i, int rc)
{
	if ((rc == -ETIMEDOUT || rc == -EBUSY) && i < DPQD_MAX_SHARDS &&
	    d->sh[i].why[0] != '\0')
		return d->sh[i].why;
	return strerror(-rc);
}

int
dpqd_shardctl_all(struct dpqd *d, enum dpqd_shard_op op, bool flag,
		uint64_t code, const char *reason)
{
	unsigned int i;
	int rc, first = 0;

	for (i = 0; i < d->nshards; i++) {
		struct dpqd_mailbox *mb = d->sh[i].mb;

		if (mb == NULL)
			continue;
		mb->op = op;
		mb->flag = flag;
		mb->code = code;
		snprintf(mb->reason, sizeof(mb->reason), "%s",
				reason != NULL ? reason : "");
		rc = dpqd_shardctl_call(d, i, DPQD_SHARD_WAIT_MS);
		if (rc != 0 && first == 0)
			first = rc;
	}
	return first;
}
