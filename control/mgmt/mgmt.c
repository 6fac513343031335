/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mgmt.c: the management thread's handshake service (see mgmt.h): a table
 * of TLS handshakes keyed by connection handle, fed from the shards'
 * request rings, answering on their reply rings through bounded backlogs.
 *
 * The table is a fixed array of entries (free list) indexed by an
 * open-addressing hash of the handle (linear probing, backward-shift
 * deletion), sized at creation: no allocation per message; GnuTLS
 * allocates per handshake.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_log.h>
#include <rte_malloc.h>
#include <rte_mempool.h>
#include <rte_ring.h>

#include "control/mgmt/mgmt.h"
#include "dataplane/engine/errors.h"
#include "dataplane/engine/tparams.h"

#define ENTRY_NONE	UINT32_MAX
/* Requests dequeued per ring operation. */
#define POLL_BURST	32

struct mgmt_fail {
	uint64_t handle;
	uint64_t code;
};

/* One shard as the service sees it: its channel and reply backlogs. */
struct mgmt_shard {
	struct dpq_hs_chan chan;
	struct dpq_hs_backlog bl;
	struct dpq_hs_msg *slots;
	/* HS_FAILED waiting for room (sent after the backlog empties). */
	struct mgmt_fail *fails;
	uint32_t fail_cap, fail_head, fail_count;
	struct dpq_hs_post_stats post;
	uint64_t requests, bad, stale, fail_lost, refused, cancelled;
	uint64_t hs_started, hs_ok, hs_failed, active;
	uint64_t hs_full, hs_resumed, hs_early, cpu_full_ns, cpu_resumed_ns;
	uint64_t backlog_now;
};

/* A server config request from another thread (see dpq_mgmt_rotate_keys):
 * the caller fills the arguments and bumps seq (release); the service
 * runs it, fills the results and sets done = seq (release). */
enum { REQ_ROTATE = 1, REQ_POLICY };
struct mgmt_req {
	uint32_t seq, done;
	int op;
	unsigned int what;
	struct dpq_srvcfg_policy pol;
	int rc;
	char err[DPQ_SRVCFG_ERR_MAX];
};

/* One handshake in progress. */
struct hs_entry {
	uint64_t handle;		/* DPQ_HS_HANDLE_NONE: free */
	struct dpq_mgmt *m;
	struct mgmt_shard *sh;
	struct dpq_tls *tls;
	enum dpq_role role;
	struct dpq_cid odcid;
	struct dpq_cid peer_scid;
	bool complete_sent;
	/* A reply could not be posted (backlog overflow): fail. */
	bool broken;
	int8_t ctx_slot;		/* server: m->ctxs[] it uses; -1 none */
	uint32_t next_free;
	uint64_t cpu_ns;		/* this thread's CPU spent on it */
};

/*
 * Server TLS contexts: the current one and those a reload replaced that
 * handshakes still use (their GnuTLS sessions point into them). A
 * replaced context is destroyed when its last handshake ends.
 */
#define MGMT_CTX_SLOTS	8
struct mgmt_ctx {
	struct dpq_tls_ctx *ctx;
	uint32_t refs;			/* handshakes using it */
	bool owned;			/* destroyed by the service */
};

struct dpq_mgmt {
	struct dpq_mgmt_conf conf;
	unsigned int n_shards;
	struct mgmt_shard *shards;
	struct hs_entry *entries;
	uint32_t cap;
	uint32_t free_head;
	uint32_t *hidx;			/* entry index + 1; 0: empty */
	uint32_t hbits;
	unsigned int rr;		/* first shard of the next poll */
	pthread_t thread;
	bool running;
	int stop;
	struct mgmt_ctx ctxs[MGMT_CTX_SLOTS];
	int cur_ctx;			/* -1: no server context */
	struct dpq_tls_ctx *pending_ctx;	/* set by any thread */
	uint64_t ctx_swaps;
	/* Server config (srvcfg.h): the version each shard was sent. */
	struct dpq_srvcfg *srvcfg;
	uint64_t *pushed;
	uint64_t tick_s;		/* wall second of the last tick */
	struct mgmt_req req;
	pthread_mutex_t info_lock;	/* info: read by other threads */
	struct dpq_mgmt_srvcfg_info info;
	/* 0-RTT anti-replay of every server handshake (srvcfg only). */
	struct dpq_tls_antireplay *ar;
	uint64_t ar_epoch;
	uint32_t ar_window, ar_entries;
};

static unsigned int instance_seq;

/* ---- handle table ------------------------------------------------------- */

static uint32_t
hash_home(const struct dpq_mgmt *m, uint64_t handle)
{
	return (uint32_t)((handle * UINT64_C(0x9e3779b97f4a7c15)) >>
			(64 - m->hbits));
}

static uint32_t
hash_mask(const struct dpq_mgmt *m)
{
	return (UINT32_C(1) << m->hbits) - 1;
}

/* Slot of handle in hidx, or UINT32_MAX. */
static uint32_t
hash_find(const struct dpq_mgmt *m, uint64_t handle)
{
	uint32_t i = hash_home(m, handle), mask = hash_mask(m);

	while (m->hidx[i] != 0) {
		if (m->entries[m->hidx[i] - 1].handle == handle)
			return i;
		i = (i + 1) & mask;
	}
	return UINT32_MAX;
}

static struct hs_entry *
entry_find(struct dpq_mgmt *m, uint64_t handle)
{
	uint32_t i = hash_find(m, handle);

	return i == UINT32_MAX ? NULL : &m->entries[m->hidx[i] - 1];
}

static struct hs_entry *
entry_add(struct dpq_mgmt *m, uint64_t handle, struct mgmt_shard *sh)
{
	uint32_t idx = m->free_head, i, mask = hash_mask(m);
	struct hs_entry *e;

	if (idx == ENTRY_NONE)
		return NULL;
	e = &m->entries[idx];
	m->free_head = e->next_free;
	memset(e, 0, sizeof(*e));
	e->handle = handle;
	e->m = m;
	e->sh = sh;
	e->ctx_slot = -1;
	e->next_free = ENTRY_NONE;
	/* The table holds at most half the slots: a free one exists. */
	for (i = hash_home(m, handle); m->hidx[i] != 0; i = (i + 1) & mask)
		;
	m->hidx[i] = idx + 1;
	DPQ_HS_STAT_ADD(sh->active, 1);
	DPQ_HS_STAT_ADD(sh->hs_started, 1);
	return e;
}

/* ---- server TLS contexts (mgmt only) ------------------------------------ */

static void
ctx_unref(struct dpq_mgmt *m, int slot)
{
	struct mgmt_ctx *mc = &m->ctxs[slot];

	if (mc->refs > 0)
		mc->refs--;
	if (mc->refs == 0 && slot != m->cur_ctx && mc->ctx != NULL) {
		if (mc->owned)
			dpq_tls_ctx_destroy(mc->ctx);
		mc->ctx = NULL;
	}
}

/* Take a context handed over by dpq_mgmt_set_server_ctx(). */
static void
ctx_adopt(struct dpq_mgmt *m)
{
	struct dpq_tls_ctx *p = __atomic_load_n(&m->pending_ctx,
			__ATOMIC_ACQUIRE);
	int i, old = m->cur_ctx;

	if (p == NULL)
		return;
	for (i = 0; i < MGMT_CTX_SLOTS; i++)
		if (m->ctxs[i].ctx == NULL)
			break;
	if (i == MGMT_CTX_SLOTS)
		return;	/* replaced ones still busy: adopt on a later poll */
	m->ctxs[i].ctx = p;
	m->ctxs[i].refs = 0;
	m->ctxs[i].owned = true;
	m->cur_ctx = i;
	if (old >= 0) {
		/* From now on the service owns the one it replaces. */
		m->ctxs[old].owned = true;
		m->ctxs[old].refs++;
		ctx_unref(m, old);
	}
	__atomic_store_n(&m->ctx_swaps, m->ctx_swaps + 1, __ATOMIC_RELAXED);
	__atomic_store_n(&m->pending_ctx, NULL, __ATOMIC_RELEASE);
}

int
dpq_mgmt_set_server_ctx(struct dpq_mgmt *m, struct dpq_tls_ctx *ctx)
{
	struct dpq_tls_ctx *none = NULL;

	if (m == NULL || ctx == NULL)
		return -EINVAL;
	if (!__atomic_compare_exchange_n(&m->pending_ctx, &none, ctx, false,
			__ATOMIC_RELEASE, __ATOMIC_RELAXED))
		return -EBUSY;
	return 0;
}

bool
dpq_mgmt_server_ctx_pending(const struct dpq_mgmt *m)
{
	return __atomic_load_n(&m->pending_ctx, __ATOMIC_ACQUIRE) != NULL;
}

uint64_t
dpq_mgmt_server_ctx_swaps(const struct dpq_mgmt *m)
{
	return __atomic_load_n(&m->ctx_swaps, __ATOMIC_RELAXED);
}

static void
entry_free(struct dpq_mgmt *m, struct hs_entry *e)
{
	uint32_t i = hash_find(m, e->handle), j, k, mask = hash_mask(m);

	dpq_tls_free(e->tls);
	e->tls = NULL;
	if (e->ctx_slot >= 0)
		ctx_unref(m, e->ctx_slot);
	e->ctx_slot = -1;
	if (i != UINT32_MAX) {
		/* Backward-shift deletion keeps every probe chain intact. */
		m->hidx[i] = 0;
		for (j = (i + 1) & mask; m->hidx[j] != 0; j = (j + 1) & mask) {
			k = hash_home(m, m->entries[m->hidx[j] - 1].handle);
			if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
				continue;
			m->hidx[i] = m->hidx[j];
			m->hidx[j] = 0;
			i = j;
		}
	}
	DPQ_HS_STAT_ADD(e->sh->active, (uint64_t)-1);
	e->handle = DPQ_HS_HANDLE_NONE;
	e->next_free = m->free_head;
	m->free_head = (uint32_t)(e - m->entries);
}

/* ---- replies -------------------------------------------------------------- */

static void
msg_init(struct dpq_hs_msg *msg, uint64_t handle, uint8_t type)
{
	memset(msg, 0, DPQ_HS_MSG_HDR_LEN);
	msg->handle = handle;
	msg->type = type;
}

static int
post(struct mgmt_shard *sh, const struct dpq_hs_msg *msg)
{
	return dpq_hs_post(sh->chan.to_shard, sh->chan.rep_pool, &sh->bl, msg,
			&sh->post);
}

/* HS_FAILED goes straight out when nothing waits, else to the fail list
 * (flushed once the backlog is empty, so it never overtakes a reply). */
static void
post_failed(struct mgmt_shard *sh, uint64_t handle, uint64_t code)
{
	struct dpq_hs_msg msg;

	msg_init(&msg, handle, DPQ_HS_FAILED);
	msg.error_code = code;
	if (sh->bl.count == 0 && sh->fail_count == 0 &&
	    dpq_hs_msg_send_copy(sh->chan.to_shard, sh->chan.rep_pool, &msg,
			&sh->post) == 0)
		return;
	if (sh->fail_count == sh->fail_cap) {
		DPQ_HS_STAT_ADD(sh->fail_lost, 1);
		return;
	}
	sh->fails[(sh->fail_head + sh->fail_count) % sh->fail_cap] =
		(struct mgmt_fail){ handle, code };
	sh->fail_count++;
}

static unsigned int
shard_flush(struct mgmt_shard *sh)
{
	unsigned int n;

	n = dpq_hs_backlog_flush(sh->chan.to_shard, sh->chan.rep_pool, &sh->bl,
			&sh->post);
	while (sh->bl.count == 0 && sh->fail_count > 0) {
		struct mgmt_fail *f = &sh->fails[sh->fail_head];
		struct dpq_hs_msg msg;

		msg_init(&msg, f->handle, DPQ_HS_FAILED);
		msg.error_code = f->code;
		if (dpq_hs_msg_send_copy(sh->chan.to_shard, sh->chan.rep_pool,
				&msg, &sh->post) != 0)
			break;
		sh->fail_head = (sh->fail_head + 1) % sh->fail_cap;
		sh->fail_count--;
		n++;
	}
	return n;
}

/* dpquic.mgmt: one DEBUG line per handshake outcome (per connection, so
 * off by default: log.levels = ["dpquic.mgmt:debug"]). */
RTE_LOG_REGISTER(dpq_logtype_mgmt, dpquic.mgmt, NOTICE);

/* End a handshake that failed: drop its queued replies, tell the shard. */
static void
entry_fail(struct dpq_mgmt *m, struct hs_entry *e, uint64_t code)
{
	struct mgmt_shard *sh = e->sh;

	dpq_hs_backlog_purge(&sh->bl, e->handle, 0, NULL);
	rte_log(RTE_LOG_DEBUG, dpq_logtype_mgmt, "conn %" PRIx64 ": handshake "
		"failed: %s (0x%" PRIx64 ")%s\n", e->handle,
		code >= 0x100 && code <= 0x1ff ? "TLS alert" :
		dpq_transport_error_str(code ? code : DPQ_TE_INTERNAL_ERROR),
		code ? code : (uint64_t)DPQ_TE_INTERNAL_ERROR,
		code == 0x178 ? " (no common ALPN)" : "");
	post_failed(sh, e->handle, code ? code : DPQ_TE_INTERNAL_ERROR);
	DPQ_HS_STAT_ADD(sh->hs_failed, 1);
	entry_free(m, e);
}

/* ---- TLS callbacks (mgmt only) --------------------------------------------- */

static int
on_secret(void *arg, enum dpq_tls_level level, bool write,
		uint16_t cipher_suite, const uint8_t *secret, size_t len)
{
	struct hs_entry *e = arg;
	struct dpq_hs_msg msg;
	int rc;

	if (e->broken || len > DPQ_HS_SECRET_MAX) {
		e->broken = true;
		return -1;
	}
	msg_init(&msg, e->handle, DPQ_HS_SECRET);
	msg.epoch = (uint8_t)level;
	msg.flags = write ? DPQ_HS_F_WRITE : 0;
	msg.cipher_suite = cipher_suite;
	msg.len = (uint16_t)len;
	memcpy(msg.data, secret, len);
	rc = post(e->sh, &msg);
	explicit_bzero(msg.data, DPQ_HS_SECRET_MAX);
	if (rc != 0) {
		e->broken = true;
		return -1;
	}
	/* A server's 0-RTT read key: TLS accepted 0-RTT; the shard needs
	 * the application it is for before it processes 0-RTT data. */
	if (level == DPQ_TLS_LEVEL_EARLY && !write && e->tls != NULL &&
	    e->role == DPQ_ROLE_SERVER) {
		const char *alpn = dpq_tls_alpn_now(e->tls);
		size_t n = strnlen(alpn, DPQ_HS_ALPN_MAX - 1);

		msg_init(&msg, e->handle, DPQ_HS_EARLY);
		memcpy(msg.data, alpn, n);
		msg.data[n] = '\0';
		msg.len = (uint16_t)(n + 1);
		if (post(e->sh, &msg) != 0) {
			e->broken = true;
			return -1;
		}
	}
	return 0;
}

/* Post a byte string as consecutive messages of type t, DATA_MAX each;
 * with more_flag, all but the last carry DPQ_HS_F_MORE. */
static int
post_bytes(struct hs_entry *e, uint8_t t, uint8_t epoch, bool more_flag,
		const uint8_t *data, size_t len)
{
	struct dpq_hs_msg msg;
	size_t off = 0;

	do {
		size_t n = len - off < DPQ_HS_MSG_DATA_MAX ? len - off :
			DPQ_HS_MSG_DATA_MAX;

		msg_init(&msg, e->handle, t);
		msg.epoch = epoch;
		msg.len = (uint16_t)n;
		if (more_flag && off + n < len)
			msg.flags = DPQ_HS_F_MORE;
		if (n != 0)
			memcpy(msg.data, data + off, n);
		if (post(e->sh, &msg) != 0) {
			e->broken = true;
			return -1;
		}
		off += n;
	} while (off < len);
	return 0;
}

static int
on_send(void *arg, enum dpq_tls_level level, const uint8_t *data, size_t len)
{
	struct hs_entry *e = arg;

	if (e->broken)
		return -1;
	if (len == 0)
		return 0;
	return post_bytes(e, DPQ_HS_SEND, (uint8_t)level, false, data, len);
}

/* RFC 9001 §8.2: accept or refuse the peer's transport parameters here,
 * synchronously; the shard re-applies them. RFC 9000 §7.3: check the CIDs
 * this side knows (the rest, e.g. retry_source_connection_id and the
 * server's initial_source_connection_id, is checked by the shard). */
static uint64_t
on_peer_tparams(void *arg, const uint8_t *data, size_t len)
{
	struct hs_entry *e = arg;
	enum dpq_role peer = e->role == DPQ_ROLE_SERVER ? DPQ_ROLE_CLIENT :
		DPQ_ROLE_SERVER;
	struct dpq_tparams tp;

	if (e->broken)
		return DPQ_TE_INTERNAL_ERROR;
	if (dpq_tparams_decode(data, data + len, peer, NULL, 0, &tp) != 0)
		return DPQ_TE_TRANSPORT_PARAMETER_ERROR;
	if (e->role == DPQ_ROLE_SERVER) {
		struct dpq_cid_auth auth = { .peer_scid = e->peer_scid };

		if (dpq_tparams_check_cids(&tp, DPQ_ROLE_SERVER, &auth) != 0)
			return DPQ_TE_TRANSPORT_PARAMETER_ERROR;
	} else if (!dpq_tparams_has(&tp, DPQ_TP_ORIGINAL_DCID) ||
	    !dpq_tparams_has(&tp, DPQ_TP_INITIAL_SCID) ||
	    !dpq_cid_eq(&tp.original_dcid, &e->odcid)) {
		return DPQ_TE_TRANSPORT_PARAMETER_ERROR;
	}
	if (post_bytes(e, DPQ_HS_PEER_TP, 0, true, data, len) != 0)
		return DPQ_TE_INTERNAL_ERROR;
	return 0;
}

static const struct dpq_tls_callbacks tls_cbs = {
	.on_secret = on_secret,
	.on_send = on_send,
	.on_peer_tparams = on_peer_tparams,
};

/* ---- requests (mgmt only) ---------------------------------------------------- */

/* After dpq_tls ran: report failure or completion. */
static void
entry_progress(struct dpq_mgmt *m, struct hs_entry *e, int rc)
{
	struct dpq_hs_msg msg;
	const char *alpn;
	size_t n;

	if (rc != 0 || e->broken) {
		entry_fail(m, e, e->broken || e->tls == NULL ?
				DPQ_TE_INTERNAL_ERROR :
				dpq_tls_error_code(e->tls));
		return;
	}
	if (e->complete_sent || !dpq_tls_handshake_complete(e->tls))
		return;
	alpn = dpq_tls_alpn(e->tls);
	n = strnlen(alpn, DPQ_HS_ALPN_MAX - 1);
	msg_init(&msg, e->handle, DPQ_HS_COMPLETE);
	memcpy(msg.data, alpn, n);
	msg.data[n] = '\0';
	msg.len = (uint16_t)(n + 1);
	msg.cipher_suite = dpq_tls_cipher_suite(e->tls);
	if (dpq_tls_resumed(e->tls))
		msg.flags |= DPQ_HS_F_RESUMED;
	if (dpq_tls_early_data_accepted(e->tls))
		msg.flags |= DPQ_HS_F_EARLY_OK;
	if (post(e->sh, &msg) != 0) {
		entry_fail(m, e, DPQ_TE_INTERNAL_ERROR);
		return;
	}
	e->complete_sent = true;
	DPQ_HS_STAT_ADD(e->sh->hs_ok, 1);
	rte_log(RTE_LOG_DEBUG, dpq_logtype_mgmt, "conn %" PRIx64 ": TLS "
		"handshake complete, ALPN %s\n", e->handle, alpn);
	if (e->role == DPQ_ROLE_SERVER) {
		struct mgmt_shard *sh = e->sh;

		if (msg.flags & DPQ_HS_F_RESUMED) {
			DPQ_HS_STAT_ADD(sh->hs_resumed, 1);
			DPQ_HS_STAT_ADD(sh->cpu_resumed_ns, e->cpu_ns);
		} else {
			DPQ_HS_STAT_ADD(sh->hs_full, 1);
			DPQ_HS_STAT_ADD(sh->cpu_full_ns, e->cpu_ns);
		}
		if (msg.flags & DPQ_HS_F_EARLY_OK)
			DPQ_HS_STAT_ADD(sh->hs_early, 1);
	}
	/* A QUIC client sends no TLS message after its Finished (no
	 * KeyUpdate in QUIC, RFC 9001 §6): a server needs no TLS state
	 * past completion. */
	if (e->role == DPQ_ROLE_SERVER)
		entry_free(m, e);
}

/* This thread's CPU time (ns). */
static uint64_t
cpu_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A server handshake's tickets and 0-RTT from the current server config
 * version (NULL for clients and without a server config). */
static const struct dpq_tls_session_opts *
session_opts(struct dpq_mgmt *m, const struct hs_entry *e,
		struct dpq_tls_session_opts *so)
{
	const struct dpq_srvcfg_version *v;

	if (e->role != DPQ_ROLE_SERVER || m->srvcfg == NULL)
		return NULL;
	v = dpq_srvcfg_current(m->srvcfg);
	memset(so, 0, sizeof(*so));
	so->stek = v->stek[0];
	so->stek_prev = v->stek_has_prev ? v->stek[1] : NULL;
	so->ticket_lifetime_s = v->policy.ticket_lifetime_s;
	so->early_data = v->policy.early_data && m->ar != NULL;
	so->antireplay = m->ar;
	return so;
}

static void
req_new(struct dpq_mgmt *m, struct mgmt_shard *sh,
		const struct dpq_hs_msg *req)
{
	struct dpq_tls_ctx *ctx;
	struct hs_entry *e;
	int rc;

	if (req->role > DPQ_ROLE_SERVER || req->odcid.len > DPQ_MAX_CID_LEN ||
	    req->peer_scid.len > DPQ_MAX_CID_LEN ||
	    entry_find(m, req->handle) != NULL) {
		DPQ_HS_STAT_ADD(sh->bad, 1);
		return;
	}
	ctx = req->role != DPQ_ROLE_SERVER ? m->conf.client_ctx :
		m->cur_ctx >= 0 ? m->ctxs[m->cur_ctx].ctx : NULL;
	if (ctx == NULL) {
		DPQ_HS_STAT_ADD(sh->refused, 1);
		post_failed(sh, req->handle, DPQ_TE_INTERNAL_ERROR);
		return;
	}
	e = entry_add(m, req->handle, sh);
	if (e == NULL) {
		/* RFC 9000 §20.1: CONNECTION_REFUSED. */
		DPQ_HS_STAT_ADD(sh->refused, 1);
		post_failed(sh, req->handle, DPQ_TE_CONNECTION_REFUSED);
		return;
	}
	e->role = (enum dpq_role)req->role;
	if (e->role == DPQ_ROLE_SERVER) {
		e->ctx_slot = (int8_t)m->cur_ctx;
		m->ctxs[m->cur_ctx].refs++;
	}
	e->odcid = req->odcid;
	e->peer_scid = req->peer_scid;
	/* A client's ClientHello comes out through on_send in here. */
	{
		struct dpq_tls_session_opts so;
		uint64_t t0 = cpu_now_ns();

		rc = dpq_tls_new_opts(ctx, &tls_cbs, e, req->data, req->len,
				session_opts(m, e, &so), &e->tls);
		explicit_bzero(&so, sizeof(so));
		e->cpu_ns += cpu_now_ns() - t0;
	}
	if (rc != 0)
		e->tls = NULL;
	entry_progress(m, e, rc);
}

static void
handle_request(struct dpq_mgmt *m, struct mgmt_shard *sh,
		const struct dpq_hs_msg *req)
{
	struct hs_entry *e;
	int rc;

	DPQ_HS_STAT_ADD(sh->requests, 1);
	if (req->handle == DPQ_HS_HANDLE_NONE ||
	    dpq_hs_handle_shard(req->handle) != sh->chan.shard_id ||
	    req->len > DPQ_HS_MSG_DATA_MAX) {
		DPQ_HS_STAT_ADD(sh->bad, 1);
		return;
	}
	/* A handshake the shard gave up on while this request waited
	 * (evicted half-open, closed): no TLS work for it (msg.h). Its
	 * HS_RELEASE follows and finds nothing. */
	if ((req->type == DPQ_HS_NEW || req->type == DPQ_HS_CRYPTO) &&
	    !dpq_hs_chan_live(&sh->chan, req->handle)) {
		DPQ_HS_STAT_ADD(sh->cancelled, 1);
		e = entry_find(m, req->handle);
		if (e != NULL) {
			dpq_hs_backlog_purge(&sh->bl, e->handle, 0, NULL);
			entry_free(m, e);
		}
		return;
	}
	switch (req->type) {
	case DPQ_HS_NEW:
		req_new(m, sh, req);
		break;
	case DPQ_HS_CRYPTO:
		if (req->epoch >= DPQ_TLS_LEVELS ||
		    req->epoch == DPQ_TLS_LEVEL_EARLY) {
			DPQ_HS_STAT_ADD(sh->bad, 1);
			break;
		}
		e = entry_find(m, req->handle);
		if (e == NULL) {
			/* Finished, failed, or a stale generation. */
			DPQ_HS_STAT_ADD(sh->stale, 1);
			break;
		}
		{
			uint64_t t0 = cpu_now_ns();

			rc = dpq_tls_recv(e->tls,
					(enum dpq_tls_level)req->epoch,
					req->data, req->len);
			e->cpu_ns += cpu_now_ns() - t0;
		}
		entry_progress(m, e, rc);
		break;
	case DPQ_HS_RELEASE:
		/* Unknown is normal here: server entries end at completion. */
		e = entry_find(m, req->handle);
		if (e != NULL) {
			dpq_hs_backlog_purge(&sh->bl, e->handle, 0, NULL);
			entry_free(m, e);
		}
		break;
	default:
		DPQ_HS_STAT_ADD(sh->bad, 1);
		break;
	}
}

/* ---- server config (mgmt only, except the request entry points) ------ */

static void
info_update(struct dpq_mgmt *m)
{
	const struct dpq_srvcfg_version *v = dpq_srvcfg_current(m->srvcfg);

	pthread_mutex_lock(&m->info_lock);
	m->info.version = v->version;
	m->info.early_epoch = v->early_epoch;
	memcpy(m->info.stek_name, v->stek_name, sizeof(v->stek_name));
	memcpy(m->info.token_name, v->token_name, sizeof(v->token_name));
	m->info.token_id[0] = v->token_id[0];
	m->info.token_id[1] = v->token_has_prev ? v->token_id[1] : 0;
	m->info.policy = v->policy;
	pthread_mutex_unlock(&m->info_lock);
}

/* What a shard needs of a server config version: the token keys and
 * the policies its listener and connections apply without asking the
 * management thread. The caller wipes it after use (keys). */
void
dpq_mgmt_hs_config(const struct dpq_srvcfg_version *v,
		struct dpq_hs_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->version = v->version;
	cfg->token_lifetime_us = v->policy.token_lifetime_us;
	cfg->retry_token_lifetime_us = v->policy.retry_token_lifetime_us;
	cfg->max_early_data = v->policy.max_early_data;
	memcpy(cfg->token_key, v->token_key, sizeof(cfg->token_key));
	cfg->token_id[0] = v->token_id[0];
	cfg->token_id[1] = v->token_id[1];
	cfg->token_has_prev = v->token_has_prev;
	cfg->new_token = v->policy.new_token;
	cfg->token_v4_prefix = v->policy.token_v4_prefix;
	cfg->token_v6_prefix = v->policy.token_v6_prefix;
	cfg->early_data = v->policy.early_data;
}

/* Send the current version to every shard that lacks it. A full backlog
 * leaves it for the next poll. */
static unsigned int
srvcfg_push(struct dpq_mgmt *m)
{
	const struct dpq_srvcfg_version *v = dpq_srvcfg_current(m->srvcfg);
	struct dpq_hs_config cfg;
	struct dpq_hs_msg msg;
	unsigned int i, n = 0;

	for (i = 0; i < m->n_shards; i++)
		if (m->pushed[i] != v->version)
			break;
	if (i == m->n_shards)
		return 0;
	dpq_mgmt_hs_config(v, &cfg);
	msg_init(&msg, DPQ_HS_HANDLE_NONE, DPQ_HS_CONFIG);
	memcpy(msg.data, &cfg, sizeof(cfg));
	msg.len = sizeof(cfg);
	for (i = 0; i < m->n_shards; i++) {
		if (m->pushed[i] == v->version)
			continue;
		if (post(&m->shards[i], &msg) == 0) {
			m->pushed[i] = v->version;
			n++;
		}
	}
	explicit_bzero(&cfg, sizeof(cfg));
	dpq_hs_msg_wipe(&msg);
	return n;
}

/* The anti-replay recorder after a new version: a new window or size,
 * or a new early_epoch (a change 0-RTT clients relied on), starts the
 * recording again: tickets issued before resume without 0-RTT. */
static void
ar_follow(struct dpq_mgmt *m)
{
	const struct dpq_srvcfg_version *v = dpq_srvcfg_current(m->srvcfg);
	const struct dpq_srvcfg_policy *p = &v->policy;

	if (m->ar == NULL) {
		if (dpq_tls_antireplay_create(p->replay_window_ms,
				p->replay_entries, &m->ar) != 0)
			return;	/* no 0-RTT, resumption goes on */
	} else if (v->early_epoch != m->ar_epoch ||
		   p->replay_window_ms != m->ar_window ||
		   p->replay_entries != m->ar_entries) {
		if (dpq_tls_antireplay_restart(m->ar, p->replay_window_ms,
				p->replay_entries) != 0)
			return;
	} else {
		return;
	}
	m->ar_epoch = v->early_epoch;
	m->ar_window = p->replay_window_ms;
	m->ar_entries = p->replay_entries;
}

static unsigned int
srvcfg_poll(struct dpq_mgmt *m)
{
	uint32_t seq = __atomic_load_n(&m->req.seq, __ATOMIC_ACQUIRE);
	uint64_t before = dpq_srvcfg_current(m->srvcfg)->version;
	uint64_t now_s = (uint64_t)time(NULL);

	if (seq != m->req.done) {
		m->req.err[0] = '\0';
		if (m->req.op == REQ_ROTATE) {
			m->req.rc = dpq_srvcfg_rotate(m->srvcfg, m->req.what,
					now_s, m->req.err,
					sizeof(m->req.err));
			if (m->req.rc == 0)
				__atomic_store_n(&m->info.rotations,
					m->info.rotations + 1,
					__ATOMIC_RELAXED);
		} else {
			m->req.rc = dpq_srvcfg_set_policy(m->srvcfg,
					&m->req.pol, m->req.err,
					sizeof(m->req.err));
		}
		__atomic_store_n(&m->req.done, seq, __ATOMIC_RELEASE);
	}
	if (now_s != m->tick_s) {
		m->tick_s = now_s;
		if (dpq_srvcfg_tick(m->srvcfg, now_s))
			__atomic_store_n(&m->info.scheduled,
				m->info.scheduled + 1, __ATOMIC_RELAXED);
	}
	if (dpq_srvcfg_current(m->srvcfg)->version != before) {
		info_update(m);
		ar_follow(m);
	}
	return srvcfg_push(m);
}

static int
srvcfg_request(struct dpq_mgmt *m, int op, unsigned int what,
		const struct dpq_srvcfg_policy *p, int timeout_ms, char *err,
		size_t n)
{
	uint32_t seq;
	struct timespec ts = { 0, 100000 };
	long waited_us = 0;

	if (m == NULL)
		return -EINVAL;
	if (m->srvcfg == NULL) {
		snprintf(err, n, "no server config");
		return -ENOENT;
	}
	if (__atomic_load_n(&m->req.done, __ATOMIC_ACQUIRE) != m->req.seq) {
		snprintf(err, n, "an earlier request is still running");
		return -EBUSY;
	}
	m->req.op = op;
	m->req.what = what;
	if (p != NULL)
		m->req.pol = *p;
	seq = m->req.seq + 1;
	__atomic_store_n(&m->req.seq, seq, __ATOMIC_RELEASE);
	while (__atomic_load_n(&m->req.done, __ATOMIC_ACQUIRE) != seq) {
		if (waited_us >= (long)timeout_ms * 1000) {
			snprintf(err, n, "the management thread did not answer "
				"within %d ms (the request still runs)",
				timeout_ms);
			return -ETIMEDOUT;
		}
		nanosleep(&ts, NULL);
		waited_us += 100;
	}
	if (m->req.rc != 0)
		snprintf(err, n, "%s", m->req.err);
	return m->req.rc;
}

int
dpq_mgmt_rotate_keys(struct dpq_mgmt *m, unsigned int what, int timeout_ms,
		char *err, size_t n)
{
	return srvcfg_request(m, REQ_ROTATE, what, NULL, timeout_ms, err, n);
}

int
dpq_mgmt_set_policy(struct dpq_mgmt *m, const struct dpq_srvcfg_policy *p,
		int timeout_ms, char *err, size_t n)
{
	if (p == NULL)
		return -EINVAL;
	return srvcfg_request(m, REQ_POLICY, 0, p, timeout_ms, err, n);
}

int
dpq_mgmt_srvcfg_info(struct dpq_mgmt *m, struct dpq_mgmt_srvcfg_info *out)
{
	if (m == NULL || out == NULL)
		return -EINVAL;
	if (m->srvcfg == NULL)
		return -ENOENT;
	pthread_mutex_lock(&m->info_lock);
	*out = m->info;
	pthread_mutex_unlock(&m->info_lock);
	out->rotations = __atomic_load_n(&m->info.rotations,
			__ATOMIC_RELAXED);
	out->scheduled = __atomic_load_n(&m->info.scheduled,
			__ATOMIC_RELAXED);
	return 0;
}

int
dpq_mgmt_poll(struct dpq_mgmt *m, unsigned int budget)
{
	unsigned int work = 0, left = budget, i, idle_rounds = 0;
	void *burst[POLL_BURST];

	if (m == NULL)
		return -EINVAL;
	ctx_adopt(m);
	if (m->srvcfg != NULL)
		work += srvcfg_poll(m);
	for (i = 0; i < m->n_shards; i++)
		work += shard_flush(&m->shards[i]);
	/* Round robin over the shards, a burst at a time, until the budget
	 * is spent or a whole round found nothing. */
	for (i = m->rr; left > 0 && idle_rounds < m->n_shards;
	     i = (i + 1) % m->n_shards) {
		struct mgmt_shard *sh = &m->shards[i];
		unsigned int n, k;

		/* Backpressure: while replies wait, leave requests queued. */
		if (sh->bl.count != 0 || sh->fail_count != 0) {
			idle_rounds++;
			continue;
		}
		n = rte_ring_dequeue_burst(sh->chan.to_mgmt, burst,
				left < POLL_BURST ? left : POLL_BURST, NULL);
		if (n == 0) {
			idle_rounds++;
			continue;
		}
		idle_rounds = 0;
		for (k = 0; k < n; k++) {
			handle_request(m, sh, burst[k]);
			dpq_hs_msg_free(burst[k]);
		}
		left -= n;
		work += n;
	}
	m->rr = (m->rr + 1) % m->n_shards;
	for (i = 0; i < m->n_shards; i++)
		__atomic_store_n(&m->shards[i].backlog_now,
				m->shards[i].bl.count, __ATOMIC_RELAXED);
	return (int)work;
}

/* ---- runner ------------------------------------------------------------------ */

static void *
runner(void *arg)
{
	struct dpq_mgmt *m = arg;
	unsigned int sleep_us = 1;

	while (!__atomic_load_n(&m->stop, __ATOMIC_ACQUIRE)) {
		struct timespec ts;

		if (dpq_mgmt_poll(m, DPQ_MGMT_RUNNER_BUDGET) > 0) {
			sleep_us = 1;
			continue;
		}
		/* Idle: back off exponentially up to idle_sleep_us. */
		ts.tv_sec = 0;
		ts.tv_nsec = (long)sleep_us * 1000;
		nanosleep(&ts, NULL);
		if (sleep_us < m->conf.idle_sleep_us)
			sleep_us = sleep_us * 2 < m->conf.idle_sleep_us ?
				sleep_us * 2 : m->conf.idle_sleep_us;
	}
	return NULL;
}

int
dpq_mgmt_start_thread(struct dpq_mgmt *m)
{
	int rc;

	if (m == NULL)
		return -EINVAL;
	if (m->running)
		return -EEXIST;
	__atomic_store_n(&m->stop, 0, __ATOMIC_RELEASE);
	rc = pthread_create(&m->thread, NULL, runner, m);
	if (rc != 0)
		return -rc;
	pthread_setname_np(m->thread, "dpq-mgmt");
	m->running = true;
	return 0;
}

int
dpq_mgmt_stop_thread(struct dpq_mgmt *m)
{
	if (m == NULL)
		return -EINVAL;
	if (!m->running)
		return -ESRCH;
	__atomic_store_n(&m->stop, 1, __ATOMIC_RELEASE);
	pthread_join(m->thread, NULL);
	m->running = false;
	return 0;
}

/* ---- lifecycle ------------------------------------------------------------- */

static void
drain_ring(struct rte_ring *r)
{
	void *obj;

	if (r == NULL)
		return;
	while (rte_ring_dequeue(r, &obj) == 0)
		dpq_hs_msg_free(obj);
}

static int
shard_init(struct dpq_mgmt *m, unsigned int id, unsigned int inst)
{
	struct mgmt_shard *sh = &m->shards[id];
	const struct dpq_mgmt_conf *c = &m->conf;
	int socket = c->socket_ids ? c->socket_ids[id] : SOCKET_ID_ANY;
	char name[RTE_MEMPOOL_NAMESIZE];

	sh->chan.shard_id = (uint16_t)id;
	snprintf(name, sizeof(name), "dpqhs%u_%u_q", inst, id);
	sh->chan.to_mgmt = rte_ring_create(name, c->ring_size, socket,
			RING_F_SP_ENQ | RING_F_SC_DEQ | RING_F_EXACT_SZ);
	snprintf(name, sizeof(name), "dpqhs%u_%u_r", inst, id);
	sh->chan.to_shard = rte_ring_create(name, c->ring_size, socket,
			RING_F_SP_ENQ | RING_F_SC_DEQ | RING_F_EXACT_SZ);
	snprintf(name, sizeof(name), "dpqhs%u_%u_qp", inst, id);
	sh->chan.req_pool = rte_mempool_create(name, c->pool_size,
			DPQ_HS_MSG_SIZE, 0, 0, NULL, NULL, NULL, NULL, socket, 0);
	snprintf(name, sizeof(name), "dpqhs%u_%u_rp", inst, id);
	sh->chan.rep_pool = rte_mempool_create(name, c->pool_size,
			DPQ_HS_MSG_SIZE, 0, 0, NULL, NULL, NULL, NULL, socket, 0);
	if (sh->chan.to_mgmt == NULL || sh->chan.to_shard == NULL ||
	    sh->chan.req_pool == NULL || sh->chan.rep_pool == NULL)
		return rte_errno ? -rte_errno : -ENOMEM;
	sh->slots = calloc(c->backlog, sizeof(*sh->slots));
	sh->fails = calloc(c->fail_backlog, sizeof(*sh->fails));
	sh->chan.live = rte_zmalloc_socket(name, c->conn_slots *
			sizeof(*sh->chan.live), RTE_CACHE_LINE_SIZE, socket);
	sh->chan.nlive = c->conn_slots;
	if (sh->slots == NULL || sh->fails == NULL || sh->chan.live == NULL)
		return -ENOMEM;
	dpq_hs_backlog_init(&sh->bl, sh->slots, c->backlog);
	sh->fail_cap = c->fail_backlog;
	return 0;
}

struct dpq_mgmt *
dpq_mgmt_create(const struct dpq_mgmt_conf *conf)
{
	struct dpq_mgmt *m;
	unsigned int i, inst;
	uint32_t hsize;
	int rc = -ENOMEM;

	if (conf == NULL || conf->n_shards == 0 ||
	    conf->n_shards > DPQ_MGMT_MAX_SHARDS ||
	    conf->max_handshakes > (UINT32_C(1) << 30)) {
		if (conf != NULL)
			dpq_srvcfg_destroy(conf->srvcfg);
		errno = EINVAL;
		return NULL;
	}
	m = calloc(1, sizeof(*m));
	if (m == NULL) {
		dpq_srvcfg_destroy(conf->srvcfg);
		errno = ENOMEM;
		return NULL;
	}
	m->conf = *conf;
	pthread_mutex_init(&m->info_lock, NULL);
	m->srvcfg = conf->srvcfg;
	m->conf.srvcfg = NULL;
	if (m->conf.ring_size == 0)
		m->conf.ring_size = DPQ_MGMT_DEFAULT_RING;
	if (m->conf.pool_size == 0)
		m->conf.pool_size = 2 * m->conf.ring_size;
	if (m->conf.max_handshakes == 0)
		m->conf.max_handshakes = DPQ_MGMT_DEFAULT_HANDSHAKES;
	if (m->conf.backlog == 0)
		m->conf.backlog = DPQ_MGMT_DEFAULT_BACKLOG;
	if (m->conf.fail_backlog == 0)
		m->conf.fail_backlog = DPQ_MGMT_DEFAULT_FAIL_BACKLOG;
	if (m->conf.idle_sleep_us == 0)
		m->conf.idle_sleep_us = DPQ_MGMT_DEFAULT_IDLE_SLEEP_US;
	if (m->conf.conn_slots == 0)
		m->conf.conn_slots = DPQ_MGMT_DEFAULT_CONN_SLOTS;
	m->n_shards = conf->n_shards;
	m->cur_ctx = -1;
	if (conf->server_ctx != NULL) {
		m->ctxs[0].ctx = conf->server_ctx;
		m->cur_ctx = 0;
	}

	m->cap = m->conf.max_handshakes;
	m->entries = calloc(m->cap, sizeof(*m->entries));
	/* At most half full keeps probe chains short. */
	for (m->hbits = 1, hsize = 2; hsize < 2 * m->cap; hsize <<= 1)
		m->hbits++;
	m->hidx = calloc(hsize, sizeof(*m->hidx));
	m->shards = calloc(m->n_shards, sizeof(*m->shards));
	m->pushed = calloc(m->n_shards, sizeof(*m->pushed));
	if (m->entries == NULL || m->hidx == NULL || m->shards == NULL ||
	    m->pushed == NULL)
		goto fail;
	if (m->srvcfg != NULL) {
		/* The shards start with this version (see the conf). */
		for (i = 0; i < m->n_shards; i++)
			m->pushed[i] = dpq_srvcfg_current(m->srvcfg)->version;
		m->tick_s = (uint64_t)time(NULL);
		info_update(m);
		ar_follow(m);
	}
	for (i = 0; i < m->cap; i++)
		m->entries[i].next_free = i + 1 < m->cap ? i + 1 : ENTRY_NONE;
	m->free_head = 0;

	/* Ring and pool names are process-wide: number the instances. */
	inst = __atomic_fetch_add(&instance_seq, 1, __ATOMIC_RELAXED);
	for (i = 0; i < m->n_shards; i++) {
		rc = shard_init(m, i, inst);
		if (rc != 0)
			goto fail;
	}
	return m;
fail:
	dpq_mgmt_destroy(m);
	errno = -rc;
	return NULL;
}

void
dpq_mgmt_destroy(struct dpq_mgmt *m)
{
	unsigned int i;

	if (m == NULL)
		return;
	if (m->running)
		dpq_mgmt_stop_thread(m);
	if (m->entries != NULL) {
		for (i = 0; i < m->cap; i++)
			dpq_tls_free(m->entries[i].tls);
	}
	/* Contexts handed over (and those they replaced) are ours. */
	for (i = 0; i < MGMT_CTX_SLOTS; i++)
		if (m->ctxs[i].ctx != NULL && m->ctxs[i].owned)
			dpq_tls_ctx_destroy(m->ctxs[i].ctx);
	if (m->pending_ctx != NULL)
		dpq_tls_ctx_destroy(m->pending_ctx);
	for (i = 0; m->shards != NULL && i < m->n_shards; i++) {
		struct mgmt_shard *sh = &m->shards[i];

		drain_ring(sh->chan.to_mgmt);
		drain_ring(sh->chan.to_shard);
		rte_ring_free(sh->chan.to_mgmt);
		rte_ring_free(sh->chan.to_shard);
		rte_mempool_free(sh->chan.req_pool);
		rte_mempool_free(sh->chan.rep_pool);
		if (sh->slots != NULL)
			dpq_hs_backlog_clear(&sh->bl);
		free(sh->slots);
		free(sh->fails);
		rte_free(sh->chan.live);
	}
	free(m->shards);
	free(m->hidx);
	free(m->entries);
	free(m->pushed);
	dpq_srvcfg_destroy(m->srvcfg);
	dpq_tls_antireplay_destroy(m->ar);
	pthread_mutex_destroy(&m->info_lock);
	free(m);
}

struct dpq_hs_chan *
dpq_mgmt_chan(struct dpq_mgmt *m, unsigned int shard)
{
	if (m == NULL || shard >= m->n_shards)
		return NULL;
	return &m->shards[shard].chan;
}

int
dpq_mgmt_get_stats(const struct dpq_mgmt *m, unsigned int shard,
		struct dpq_mgmt_stats *st)
{
	const struct mgmt_shard *sh;

	if (m == NULL || st == NULL || shard >= m->n_shards)
		return -EINVAL;
	sh = &m->shards[shard];
	st->requests = DPQ_HS_STAT_LOAD(sh->requests);
	st->bad = DPQ_HS_STAT_LOAD(sh->bad);
	st->stale = DPQ_HS_STAT_LOAD(sh->stale);
	st->replies = DPQ_HS_STAT_LOAD(sh->post.sent);
	st->ring_full = DPQ_HS_STAT_LOAD(sh->post.ring_full);
	st->pool_empty = DPQ_HS_STAT_LOAD(sh->post.pool_empty);
	st->backlogged = DPQ_HS_STAT_LOAD(sh->post.backlogged);
	st->backlog = DPQ_HS_STAT_LOAD(sh->backlog_now);
	st->backlog_max = DPQ_HS_STAT_LOAD(sh->post.backlog_max);
	st->backlog_overflow = DPQ_HS_STAT_LOAD(sh->post.backlog_overflow);
	st->fail_lost = DPQ_HS_STAT_LOAD(sh->fail_lost);
	st->refused = DPQ_HS_STAT_LOAD(sh->refused);
	st->cancelled = DPQ_HS_STAT_LOAD(sh->cancelled);
	st->hs_started = DPQ_HS_STAT_LOAD(sh->hs_started);
	st->hs_ok = DPQ_HS_STAT_LOAD(sh->hs_ok);
	st->hs_failed = DPQ_HS_STAT_LOAD(sh->hs_failed);
	st->active = DPQ_HS_STAT_LOAD(sh->active);
	st->hs_full = DPQ_HS_STAT_LOAD(sh->hs_full);
	st->hs_resumed = DPQ_HS_STAT_LOAD(sh->hs_resumed);
	st->hs_early = DPQ_HS_STAT_LOAD(sh->hs_early);
	st->cpu_full_ns = DPQ_HS_STAT_LOAD(sh->cpu_full_ns);
	st->cpu_resumed_ns = DPQ_HS_STAT_LOAD(sh->cpu_resumed_ns);
	return 0;
}
