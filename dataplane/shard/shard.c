/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The shard loop (see shard.h). Connections live in a slot array; an
 * rte_hash maps each of their connection IDs (ours, and during the
 * handshake the client's original DCID) to the slot.
 *
 * A poll touches only the connections that need it (conn.h, wake-up
 * contract): those a datagram arrived for, those whose timer fired in the
 * shard's timing wheel (dataplane/engine/wheel.h: one timer per slot, at
 * the connection's next_timeout), and those that woke themselves through
 * the hook (handshake messages, application calls). They wait on the
 * ready list, an intrusive FIFO of slots; each poll takes at most
 * DPQ_SHARD_READY_MAX of them and gives each a poll, a build of at most
 * DPQ_SHARD_CONN_TX datagrams and a re-armed timer. A connection with
 * more to send goes to the back of the list, so one busy connection
 * cannot starve the others nor the receive side. Idle connections cost
 * nothing per poll: no list of live connections is walked. Shard only.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_hash.h>
#include <rte_jhash.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>

#include "dataplane/crypto/crypto.h"
#include "dataplane/engine/packet.h"
#include "dataplane/engine/wheel.h"
#include "dataplane/server/halfopen.h"
#include "dataplane/server/listener.h"
#include "dataplane/shard/msg.h"
#include "dataplane/shard/shard.h"
#include "dataplane/shard/shard_log.h"

/* Our active CIDs (RFC 9000 §5.1.1, at most DPQ_CONN_LOCAL_CIDS) and,
 * during a server's handshake, the client's first DCID. */
#define CIDS_PER_CONN	(DPQ_CONN_LOCAL_CIDS + 1)

/* Hash key: a CID zero-padded to 20 bytes plus its length, padded to a
 * multiple of 4 and 4-aligned: rte_jhash reads whole 32-bit words. */
struct cid_key {
	uint8_t len;
	uint8_t bytes[DPQ_MAX_CID_LEN];
	uint8_t pad[3];
} __attribute__((aligned(4)));
_Static_assert(sizeof(struct cid_key) % 4 == 0, "jhash reads words");

/* Ticks of the timing wheel: 2^4 = 16 us, far below any QUIC timer's
 * useful precision (ACK delay, PTO, pacing bursts). */
#define WHEEL_TICK_SHIFT	4

struct ready_link {
	struct ready_link *next, *prev;
};

struct conn_slot {
	struct dpq_wheel_node timer;	/* at dpq_conn_next_timeout() */
	struct ready_link ready;	/* on the ready list when linked */
	struct dpq_conn *c;
	uint64_t last_active;		/* datagram or wake-up: not timers */
	uint16_t gen;
	bool hs_counted;
	uint32_t live_pos;		/* index in s->live */
	/* Its CIDs' positions in the hash's key store (the key is there:
	 * rte_hash_get_key_with_position), not copies of 24 bytes each. */
	int32_t keys[CIDS_PER_CONN];
	unsigned int nkeys;
	void *app_ctx;
};

struct dpq_shard {
	struct dpq_shard_conf conf;
	struct dpq_shard_warn warn;	/* peer warnings, rate-limited */
	struct dpq_shard_warn warn_drop;	/* listener drops (DEBUG) */
	struct dpq_shard_flood_log flood_log;	/* flood summaries */
	/* What the connections allocate, charged to one budget. */
	struct dpq_membudget budget;
	struct dpq_mem state_mem, buf_mem;
	struct dpq_crypto *crypto;
	struct rte_hash *cids;
	struct conn_slot *slots;
	uint32_t *free_list;
	uint32_t nfree;
	uint32_t *live;
	uint32_t nlive;
	struct ready_link ready;	/* connections to touch */
	struct dpq_wheel wheel;
	uint64_t now;			/* of the latest poll */
	uint64_t park_after;		/* us; UINT64_MAX: never */
	bool polled;
	struct dpq_shard_stats stats;
	/* Recent loss of closed connections: the XOR-FEC meter's prior. */
	struct dpq_fec_prior fec_prior;
	uint64_t rng;
	/* the burst being transmitted */
	struct rte_mbuf *tx[DPQ_SHARD_BURST];
	struct dpq_seal_op ops[DPQ_SHARD_BURST * DPQ_CONN_MAX_SEAL_OPS];
	uint8_t tx_nops[DPQ_SHARD_BURST];	/* seal ops of each datagram */
	unsigned int ntx, nops;
	/* Buffers kept across polls: most connections have nothing to
	 * send on most polls, so do not allocate and free them each time. */
	struct rte_mbuf *spare[DPQ_SHARD_BURST];
	unsigned int nspare;
};

/* The engine's address type mirrors the driver's (netaddr.h). */
_Static_assert(sizeof(struct dpq_netaddr) == sizeof(struct dpq_addr) &&
		offsetof(struct dpq_netaddr, port) ==
		offsetof(struct dpq_addr, port) &&
		offsetof(struct dpq_netaddr, ip) ==
		offsetof(struct dpq_addr, bytes),
		"struct dpq_netaddr and struct dpq_addr differ");
_Static_assert(DPQ_AF_INET == AF_INET && DPQ_AF_INET6 == AF_INET6,
		"address family numbers differ");

void
dpq_shard_set_fec(struct dpq_shard *s, uint8_t max_group,
		const struct dpq_fec_policy *p, uint8_t spec_retx,
		uint32_t spec_spacing_us)
{
	s->conf.conn.fec_max_group = max_group;
	s->conf.conn.fec = *p;
	s->conf.conn.spec_retx = spec_retx;
	s->conf.conn.spec_spacing_us = spec_spacing_us;
}

uint64_t
dpq_shard_now_us(void)
{
	/* cycles * 2^32 * 1e6 / hz, then >> 32: a multiply instead of the
	 * double division every poll paid (5% of a bulk transfer). */
	static uint64_t mult;
	uint64_t m = __atomic_load_n(&mult, __ATOMIC_RELAXED);

	if (m == 0) {
		m = (uint64_t)(((unsigned __int128)1000000 << 32) /
				rte_get_tsc_hz());
		__atomic_store_n(&mult, m, __ATOMIC_RELAXED);
	}
	return (uint64_t)(((unsigned __int128)rte_get_tsc_cycles() * m) >>
			32);
}

static void
rand_fill(struct dpq_shard *s, uint8_t *p, size_t n)
{
	while (n--) {
		s->rng ^= s->rng << 13;
		s->rng ^= s->rng >> 7;
		s->rng ^= s->rng << 17;
		*p++ = (uint8_t)(s->rng >> 24);
	}
}

/* ---- the ready list --------------------------------------------------- */

static void
ready_init(struct ready_link *h)
{
	h->next = h->prev = h;
}

static bool
ready_linked(const struct conn_slot *sl)
{
	return sl->ready.next != NULL;
}

static void
ready_del(struct conn_slot *sl)
{
	if (!ready_linked(sl))
		return;
	sl->ready.prev->next = sl->ready.next;
	sl->ready.next->prev = sl->ready.prev;
	sl->ready.next = sl->ready.prev = NULL;
}

/* Queue a connection to be touched (no-op if it waits already). */
static void
ready_add(struct dpq_shard *s, struct conn_slot *sl)
{
	if (ready_linked(sl) || sl->c == NULL)
		return;
	sl->ready.prev = s->ready.prev;
	sl->ready.next = &s->ready;
	s->ready.prev->next = &sl->ready;
	s->ready.prev = &sl->ready;
}

static struct conn_slot *
slot_of_link(struct ready_link *l)
{
	return (struct conn_slot *)((char *)l -
			offsetof(struct conn_slot, ready));
}

/* The connection's wake hook (conn.h): queue it. */
static void
shard_wake(void *arg, struct dpq_conn *c)
{
	struct dpq_shard *s = arg;
	uint32_t idx = (uint32_t)(uintptr_t)dpq_conn_owner(c);

	if (idx < s->conf.max_conns && s->slots[idx].c == c) {
		s->slots[idx].last_active = s->now;
		ready_add(s, &s->slots[idx]);
	}
}

/* Its timer fired. */
static void
shard_timer(void *arg, struct dpq_wheel_node *n)
{
	struct conn_slot *sl = (struct conn_slot *)n;	/* timer is first */

	ready_add(arg, sl);
}

/* The timer at the connection's next timeout, or earlier at the time to
 * park it if it is not parked yet. One due already (or an ACK deadline
 * the builder could not meet) fires at the next tick, not again in this
 * poll: a connection that reports a past time cannot make the shard
 * spin. */
static void
timer_rearm(struct dpq_shard *s, struct conn_slot *sl, uint64_t now)
{
	uint64_t t = dpq_conn_next_timeout(sl->c);

	if (s->park_after != UINT64_MAX && !dpq_conn_parked(sl->c) &&
	    sl->last_active + s->park_after < t)
		t = sl->last_active + s->park_after;
	if (t <= now)
		t = now + (UINT64_C(1) << WHEEL_TICK_SHIFT);
	if (t != sl->timer.expire || !dpq_wheel_armed(&sl->timer))
		dpq_wheel_arm(&s->wheel, &sl->timer, t);
}

int
dpq_shard_create(const struct dpq_shard_conf *conf, struct dpq_shard **out)
{
	struct rte_hash_parameters hp = { 0 };
	char name[RTE_HASH_NAMESIZE];
	struct dpq_shard *s;
	uint32_t i, max;

	if (conf == NULL || out == NULL || conf->drv == NULL ||
	    conf->hs.ops == NULL || conf->hs.attach == NULL)
		return -EINVAL;
	s = rte_zmalloc_socket("dpq_shard", sizeof(*s), RTE_CACHE_LINE_SIZE,
			conf->socket_id);
	if (s == NULL)
		return -ENOMEM;
	s->conf = *conf;
	dpq_membudget_init(&s->budget, NULL, conf->mem_budget ?
			conf->mem_budget : DPQ_SHARD_MEM_BUDGET);
	s->state_mem = dpq_membudget_state_mem(&s->budget);
	s->buf_mem = dpq_membudget_buf_mem(&s->budget);
	max = conf->max_conns ? conf->max_conns : 4096;
	s->conf.max_conns = max;
	s->park_after = conf->park_after_ms == UINT32_MAX ? UINT64_MAX :
		(uint64_t)(conf->park_after_ms ? conf->park_after_ms : 1000) *
		1000;
	if (s->conf.conn.scid_len == 0)
		s->conf.conn.scid_len = 8;
	s->rng = rte_rdtsc() ^ ((uint64_t)conf->shard_id << 32) ^
		(uint64_t)(uintptr_t)s;
	s->crypto = dpq_crypto_create();
	s->slots = calloc(max, sizeof(*s->slots));
	s->free_list = calloc(max, sizeof(*s->free_list));
	s->live = calloc(max, sizeof(*s->live));
	snprintf(name, sizeof(name), "dpq_cids_%u_%p", conf->shard_id,
			(void *)s);
	hp.name = name;
	hp.entries = max * CIDS_PER_CONN + 64;
	hp.key_len = sizeof(struct cid_key);
	hp.hash_func = rte_jhash;
	hp.socket_id = conf->socket_id;
	s->cids = rte_hash_create(&hp);
	if (s->crypto == NULL || s->slots == NULL || s->free_list == NULL ||
	    s->live == NULL || s->cids == NULL) {
		dpq_shard_destroy(s);
		return -ENOMEM;
	}
	for (i = 0; i < max; i++) {
		s->free_list[i] = max - 1 - i;
		s->slots[i].gen = 1;
		dpq_wheel_node_init(&s->slots[i].timer);
	}
	s->nfree = max;
	ready_init(&s->ready);
	/* Tick 0: the first poll's now, whatever its time base (the TSC, or
	 * a test's virtual time), lies ahead of it. */
	dpq_wheel_init(&s->wheel, 0, WHEEL_TICK_SHIFT);
	rte_log(RTE_LOG_INFO, dpq_logtype_shard, "shard %u: queue %u, %u "
		"connection slots, memory budget %" PRIu64 " MiB\n",
		s->conf.shard_id, s->conf.queue, max,
		(uint64_t)s->budget.limit >> 20);
	*out = s;
	return 0;
}

/* A connection event at DEBUG on dpquic.conn (shard_log.h); nothing is
 * formatted unless that level is on. */
static void
log_conn(struct dpq_shard *s, const struct dpq_conn *c,
		enum dpq_shard_conn_event ev)
{
	struct dpq_addr peer;
	char a[64];

	if (!rte_log_can_log(dpq_logtype_conn, RTE_LOG_DEBUG))
		return;
	dpq_shard_conn_peer(s, c, &peer);
	dpq_shard_log_conn(s->conf.shard_id, dpq_shard_conn_handle(s, c),
			dpq_addr_format(&peer, a, sizeof(a)), c, ev);
}

/* We closed c on the peer's protocol error: a rate-limited warning. */
static void
log_peer_error(struct dpq_shard *s, const struct dpq_conn *c)
{
	uint64_t code = dpq_conn_close_info(c)->error_code;
	struct dpq_addr peer;
	char a[64];

	if (code == DPQ_TE_NO_ERROR || code == DPQ_TE_INTERNAL_ERROR ||
	    !rte_log_can_log(dpq_logtype_peer, RTE_LOG_WARNING))
		return;
	dpq_shard_conn_peer(s, c, &peer);
	dpq_shard_log_peer_error(&s->warn, s->conf.shard_id,
			dpq_addr_format(&peer, a, sizeof(a)),
			dpq_conn_close_info(c), s->now);
}

/* Count why a connection ended. */
static void
count_close(struct dpq_shard *s, const struct dpq_conn *c)
{
	const struct dpq_conn_close_info *ci = dpq_conn_close_info(c);
	struct dpq_conn_stats cs;

	log_conn(s, c, DPQ_SHARD_EV_CLOSE);

	dpq_conn_get_stats(c, &cs);
	/* Paths and CIDs over the connection's life (RFC 9000 §9, §5.1). */
	s->stats.path_migrations += cs.migrations;
	s->stats.paths_validated += cs.paths_validated;
	s->stats.paths_failed += cs.paths_failed;
	s->stats.path_reverts += cs.path_reverts;
	s->stats.rx_unknown_path += cs.rx_unknown_path;
	s->stats.cids_issued += cs.cids_issued;
	s->stats.cids_retired += cs.cids_retired;
	s->stats.key_updates += cs.key_updates;
	s->stats.key_updates_peer += cs.key_updates_peer;
	if (ci->idle)
		s->stats.closed_idle++;
	else if (ci->handshake_timeout)
		s->stats.closed_handshake_timeout++;
	else if (ci->remote)
		s->stats.closed_by_peer++;
	else if (ci->app)
		s->stats.closed_app++;
	else if (dpq_conn_state(c) >= DPQ_CONN_CLOSING) {
		s->stats.closed_error++;
		log_peer_error(s, c);
		if (ci->error_code < 17)
			s->stats.closed_error_code[ci->error_code]++;
		else if (ci->error_code >= 0x100 && ci->error_code <= 0x1ff)
			s->stats.closed_crypto_error++;
	}
}

/* Remove the CID at position pos of the hash's key store. */
static void
cid_del_at(struct dpq_shard *s, int32_t pos)
{
	struct cid_key k;
	void *kp;

	if (rte_hash_get_key_with_position(s->cids, pos, &kp) != 0)
		return;
	memcpy(&k, kp, sizeof(k));
	rte_hash_del_key(s->cids, &k);
}

/* Free a slot; opened: the connection counted as created (and so now as
 * closed), not one refused at its first datagram. why: what its trace
 * says if it had not started to close (eviction, refusal, shutdown). */
static void
slot_release(struct dpq_shard *s, uint32_t idx, bool opened, const char *why)
{
	struct conn_slot *sl = &s->slots[idx];
	struct dpq_conn_stats cs;
	unsigned int k;

	dpq_conn_trace_abandon(sl->c, why, s->now);

	if (opened) {
		struct dpq_conn_stats cs;

		count_close(s, sl->c);
		s->stats.conns_closed++;
		dpq_conn_get_stats(sl->c, &cs);
		dpq_fec_prior_fold(&s->fec_prior, cs.pkts_sent,
				cs.pkts_lost + cs.fec_peer_recovered);
	}
	dpq_conn_get_stats(sl->c, &cs);
	s->stats.unvalidated_rx += cs.unvalidated_rx;
	s->stats.unvalidated_tx += cs.unvalidated_tx;
	/* Half-open bookkeeping (issue 7): a slot leaves it when freed. */
	if (s->conf.listener != NULL)
		dpq_halfopen_remove(dpq_listener_halfopen(s->conf.listener),
				idx, false);

	dpq_wheel_cancel(&s->wheel, &sl->timer);
	ready_del(sl);
	for (k = 0; k < sl->nkeys; k++)
		cid_del_at(s, sl->keys[k]);
	if (sl->app_ctx != NULL && s->conf.app.conn_ctx_free != NULL)
		s->conf.app.conn_ctx_free(s->conf.app.arg, sl->c, sl->app_ctx);
	dpq_conn_destroy(sl->c);
	sl->c = NULL;
	sl->nkeys = 0;
	sl->app_ctx = NULL;
	/* Generations are 16 bits and never 0 (the "no handle" value). */
	sl->gen = (uint16_t)(sl->gen + 1) ? (uint16_t)(sl->gen + 1) : 1;
	/* remove from the live list: move the last one into its place */
	s->live[sl->live_pos] = s->live[--s->nlive];
	s->slots[s->live[sl->live_pos]].live_pos = sl->live_pos;
	s->free_list[s->nfree++] = idx;
	s->stats.conns_active = s->nlive;
}

static void
slot_free(struct dpq_shard *s, uint32_t idx, const char *why)
{
	slot_release(s, idx, true, why);
}

void
dpq_shard_destroy(struct dpq_shard *s)
{
	if (s == NULL)
		return;
	while (s->nlive > 0)
		slot_free(s, s->live[s->nlive - 1], "shard stopped");
	if (s->ntx > 0)
		rte_pktmbuf_free_bulk(s->tx, s->ntx);
	if (s->nspare > 0)
		rte_pktmbuf_free_bulk(s->spare, s->nspare);
	rte_hash_free(s->cids);
	free(s->slots);
	free(s->free_list);
	free(s->live);
	dpq_crypto_destroy(s->crypto);
	rte_free(s);
}

static void
key_of(struct cid_key *k, const uint8_t *cid, size_t len)
{
	memset(k, 0, sizeof(*k));
	k->len = (uint8_t)len;
	memcpy(k->bytes, cid, len);
}

/* Route cid to slot idx. -EEXIST: another connection has it (a random
 * collision; rte_hash would silently hand it over). */
static int
slot_add_cid(struct dpq_shard *s, uint32_t idx, const struct dpq_cid *cid)
{
	struct conn_slot *sl = &s->slots[idx];
	struct cid_key k;
	int32_t pos;
	int rc;

	if (sl->nkeys >= CIDS_PER_CONN || cid->len == 0)
		return -ENOSPC;
	key_of(&k, cid->bytes, cid->len);
	if (rte_hash_lookup(s->cids, &k) >= 0)
		return -EEXIST;
	rc = rte_hash_add_key_data(s->cids, &k, (void *)(uintptr_t)idx);
	if (rc != 0)
		return rc;
	pos = rte_hash_lookup(s->cids, &k);
	if (pos < 0)
		return pos;
	sl->keys[sl->nkeys++] = pos;
	return 0;
}

static void
slot_del_cid(struct dpq_shard *s, uint32_t idx, const struct dpq_cid *cid)
{
	struct conn_slot *sl = &s->slots[idx];
	struct cid_key k;
	int32_t pos;
	unsigned int i;

	key_of(&k, cid->bytes, cid->len);
	pos = rte_hash_lookup(s->cids, &k);
	for (i = 0; pos >= 0 && i < sl->nkeys; i++) {
		if (sl->keys[i] != pos)
			continue;
		rte_hash_del_key(s->cids, &k);
		sl->keys[i] = sl->keys[--sl->nkeys];
		return;
	}
}

/* ---- connection IDs of ours (struct dpq_cid_ops) ------------------------ */

/* A server's come from its listener (QUIC-LB: they name this shard, so
 * packets after a migration still reach it, DESIGN §5); a client's are
 * random. Either way unique in this shard's table. */
static int
shard_cid_issue(void *arg, struct dpq_conn *c, struct dpq_cid *cid,
		uint8_t token[DPQ_RESET_TOKEN_LEN])
{
	struct dpq_shard *s = arg;
	uint32_t idx = (uint32_t)(uintptr_t)dpq_conn_owner(c);
	int tries, rc = -EEXIST;

	for (tries = 0; tries < 4 && rc == -EEXIST; tries++) {
		if (dpq_conn_is_server(c)) {
			if (s->conf.listener == NULL)
				return -ENOTSUP;
			rc = dpq_listener_new_cid(s->conf.listener, cid,
					token);
			if (rc != 0)
				return rc;
		} else {
			cid->len = s->conf.conn.scid_len;
			dpq_rand_system_fill(NULL, cid->bytes, cid->len);
			dpq_rand_system_fill(NULL, token, DPQ_RESET_TOKEN_LEN);
		}
		rc = slot_add_cid(s, idx, cid);
	}
	if (rc != 0)
		s->stats.cid_issue_fail++;
	return rc;
}

static void
shard_cid_retire(void *arg, struct dpq_conn *c, const struct dpq_cid *cid)
{
	struct dpq_shard *s = arg;

	slot_del_cid(s, (uint32_t)(uintptr_t)dpq_conn_owner(c), cid);
}

static const struct dpq_cid_ops shard_cid_ops = {
	.issue = shard_cid_issue,
	.retire = shard_cid_retire,
};

uint64_t
dpq_shard_conn_handle(const struct dpq_shard *s, const struct dpq_conn *c)
{
	uint32_t idx = (uint32_t)(uintptr_t)dpq_conn_owner(c);

	/* The layout of dataplane/shard/msg.h: shard, generation, slot. */
	return dpq_hs_handle(s->conf.shard_id, idx, s->slots[idx].gen);
}

struct dpq_conn *
dpq_shard_conn_by_handle(struct dpq_shard *s, uint64_t handle)
{
	uint32_t idx = dpq_hs_handle_index(handle);

	if (dpq_hs_handle_shard(handle) != s->conf.shard_id ||
	    idx >= s->conf.max_conns ||
	    s->slots[idx].gen != dpq_hs_handle_gen(handle))
		return NULL;
	return s->slots[idx].c;
}

static void
to_netaddr(const struct dpq_addr *a, struct dpq_netaddr *n)
{
	memcpy(n, a, sizeof(*n));
	n->pad = 0;
}

static void
from_netaddr(const struct dpq_netaddr *n, struct dpq_addr *a)
{
	memcpy(a, n, sizeof(*a));
}

/* A received datagram's addresses as the connection sees them. */
static void
rx_info_of(struct rte_mbuf *m, struct dpq_rx_info *ri)
{
	const struct dpq_pkt_meta *meta = dpq_pkt_meta(m);

	to_netaddr(&meta->local, &ri->tuple.local);
	to_netaddr(&meta->peer, &ri->tuple.peer);
	ri->ecn = meta->ecn;
}

/* Create a connection in a new slot; *init (with its first path) is
 * completed here. */
static struct dpq_conn *
conn_new(struct dpq_shard *s, struct dpq_conn_init *in)
{
	struct conn_slot *sl;
	struct dpq_conn *c;
	uint32_t idx;

	if (s->nfree == 0) {
		s->stats.conns_refused++;
		return NULL;
	}
	idx = s->free_list[--s->nfree];
	sl = &s->slots[idx];
	s->conf.conn.fec_loss_prior_ppm = dpq_fec_prior_ppm(&s->fec_prior);
	in->conf = &s->conf.conn;
	in->mem = &s->state_mem;
	in->buf_mem = &s->buf_mem;
	in->budget = &s->budget;
	in->crypto = s->crypto;
	in->hs_ops = s->conf.hs.ops;
	in->hs = s->conf.hs.hs;
	in->app = s->conf.app.ops;
	in->wake = shard_wake;
	in->wake_arg = s;
	in->cid_ops = &shard_cid_ops;
	in->cid_arg = s;
	if (dpq_conn_create(in, &c) != 0) {
		s->free_list[s->nfree++] = idx;
		s->stats.conns_refused++;
		return NULL;
	}
	sl->c = c;
	sl->nkeys = 0;
	sl->hs_counted = false;
	sl->live_pos = s->nlive;
	s->live[s->nlive++] = idx;
	dpq_conn_set_owner(c, (void *)(uintptr_t)idx);
	if (s->conf.app.conn_ctx != NULL) {
		sl->app_ctx = s->conf.app.conn_ctx(s->conf.app.arg, c);
		dpq_conn_set_app_ctx(c, sl->app_ctx);
	}
	s->stats.conns_active = s->nlive;
	/* Touched in this poll: its first flight, and its timer. */
	sl->last_active = in->now;
	ready_add(s, sl);
	if (slot_add_cid(s, idx, &in->scid) != 0 ||
	    s->conf.hs.attach(s->conf.hs.arg, c,
			dpq_shard_conn_handle(s, c)) != 0) {
		slot_release(s, idx, false, "refused: no CID or TLS");
		s->stats.conns_refused++;
		return NULL;
	}
	return c;
}

int
dpq_shard_connect(struct dpq_shard *s, const struct dpq_addr *peer,
		struct dpq_conn **out)
{
	return dpq_shard_connect_opts(s, peer, NULL, out);
}

int
dpq_shard_connect_opts(struct dpq_shard *s, const struct dpq_addr *peer,
		const struct dpq_shard_connect_opts *o, struct dpq_conn **out)
{
	struct dpq_conn_init in = { 0 };

	if (s->conf.conn.role != DPQ_ROLE_CLIENT)
		return -EINVAL;
	if (o != NULL) {
		in.token = o->token;
		in.token_len = o->token_len;
		in.remembered_tp = o->remembered_tp;
		in.remembered_tp_len = o->remembered_tp_len;
	}
	in.scid.len = s->conf.conn.scid_len;
	rand_fill(s, in.scid.bytes, in.scid.len);
	in.dcid.len = 8;
	rand_fill(s, in.dcid.bytes, in.dcid.len);
	/* The time base of the polls, once there was one. */
	in.now = s->polled ? s->now : dpq_shard_now_us();
	to_netaddr(peer, &in.tuple.peer);	/* local: the driver's */
	*out = conn_new(s, &in);
	if (*out == NULL)
		return -ENOMEM;
	s->stats.conns_created++;
	return 0;
}

/* ---- transmit ---------------------------------------------------------- */

static void
tx_flush(struct dpq_shard *s)
{
	uint16_t sent;
	unsigned int i;

	if (s->ntx == 0)
		return;
	/* One AEAD + header-protection burst for every datagram built. */
	if (dpq_crypto_seal_burst(s->crypto, s->ops, (uint16_t)s->nops) !=
	    s->nops) {
		/* Never send a datagram with a packet that failed to seal:
		 * it would leave in plaintext. */
		unsigned int op = 0, kept = 0;

		for (i = 0; i < s->ntx; i++) {
			bool ok = true;
			unsigned int k;

			for (k = 0; k < s->tx_nops[i]; k++)
				ok &= s->ops[op + k].status == 0;
			op += s->tx_nops[i];
			if (ok) {
				s->tx[kept++] = s->tx[i];
			} else {
				s->stats.tx_seal_fail++;
				rte_pktmbuf_free(s->tx[i]);
			}
		}
		s->ntx = kept;
	}
	for (i = 0; i < s->ntx; i++)
		s->stats.tx_bytes += s->tx[i]->data_len;
	sent = dpq_driver_tx_burst(s->conf.drv, s->conf.queue, s->tx,
			(uint16_t)s->ntx);
	s->stats.tx_pkts += sent;
	if (sent < s->ntx) {
		s->stats.tx_refused += s->ntx - sent;
		dpq_driver_free_bulk(s->conf.drv, s->tx + sent, s->ntx - sent);
	}
	s->ntx = 0;
	s->nops = 0;
}

/* Keep n transmit buffers at hand (fewer if the pool runs short). */
static unsigned int
spares_fill(struct dpq_shard *s, unsigned int n)
{
	if (s->nspare < n) {
		if (dpq_driver_alloc_bulk(s->conf.drv, s->conf.queue,
				&s->spare[s->nspare], n - s->nspare) == 0)
			s->nspare = n;
		else
			s->stats.tx_alloc_fail++;
	}
	return s->nspare < n ? s->nspare : n;
}

/* Build what connection idx has to send, at most DPQ_SHARD_CONN_TX
 * datagrams, a burst at a time, sealing bursts as they fill; the
 * connection says which path (addresses) each datagram goes on. *more:
 * it stopped with more to send (the budget, or no buffer). */
static unsigned int
conn_transmit(struct dpq_shard *s, uint32_t idx, uint64_t now, bool *more)
{
	struct dpq_tx_dgram d[DPQ_SHARD_BURST];
	struct conn_slot *sl = &s->slots[idx];
	unsigned int total = 0;

	*more = false;
	for (;;) {
		unsigned int i, n, base, want;
		int k;

		if (total >= DPQ_SHARD_CONN_TX) {
			*more = dpq_conn_wants_send(sl->c, now);
			break;
		}
		if (s->ntx == DPQ_SHARD_BURST)
			tx_flush(s);
		want = DPQ_SHARD_BURST - s->ntx;
		if (want > DPQ_SHARD_CONN_TX - total)
			want = DPQ_SHARD_CONN_TX - total;
		n = spares_fill(s, want);
		if (n == 0) {
			*more = true;
			break;
		}
		base = s->nspare - n;
		for (i = 0; i < n; i++) {
			struct rte_mbuf *m = s->spare[base + i];
			uint16_t room = rte_pktmbuf_tailroom(m);

			d[i].buf = rte_pktmbuf_mtod(m, uint8_t *);
			d[i].cap = room < 1500 ? room : 1500;
		}
		k = dpq_conn_build_burst(sl->c, d, n, &s->ops[s->nops], now);
		if (k <= 0)
			break;	/* keep the spares for the next one */
		for (i = 0; i < (unsigned int)k; i++) {
			struct rte_mbuf *m = s->spare[base + i];
			struct dpq_pkt_meta *meta = dpq_pkt_meta(m);

			m->data_len = d[i].len;
			m->pkt_len = d[i].len;
			from_netaddr(&d[i].tuple.peer, &meta->peer);
			from_netaddr(&d[i].tuple.local, &meta->local);
			meta->ecn = d[i].ecn;
			s->tx_nops[s->ntx] = d[i].nops;
			s->tx[s->ntx++] = m;
			s->nops += d[i].nops;
		}
		/* Unused buffers move down to stay at hand. */
		memmove(&s->spare[base], &s->spare[base + k],
				(n - (unsigned int)k) * sizeof(s->spare[0]));
		s->nspare -= (unsigned int)k;
		total += (unsigned int)k;
		if ((unsigned int)k < n)
			break;	/* nothing more now */
	}
	return total;
}

/* A reply from the listener (VN, Retry, reset, close) to the sender of
 * the datagram rx describes, from the address it was sent to. Every field
 * of the metadata is written: a recycled mbuf carries its last use's. */
static void
tx_reply(struct dpq_shard *s, const uint8_t *p, size_t len,
		const struct dpq_pkt_meta *rx)
{
	struct dpq_pkt_meta *meta;
	struct rte_mbuf *m;

	if (dpq_driver_alloc_bulk(s->conf.drv, s->conf.queue, &m, 1) != 0) {
		s->stats.tx_alloc_fail++;
		return;
	}
	memcpy(rte_pktmbuf_mtod(m, uint8_t *), p, len);
	m->data_len = (uint16_t)len;
	m->pkt_len = (uint32_t)len;
	meta = dpq_pkt_meta(m);
	memset(meta, 0, sizeof(*meta));
	meta->peer = rx->peer;
	meta->local = rx->local;
	if (dpq_driver_tx_burst(s->conf.drv, s->conf.queue, &m, 1) != 1)
		dpq_driver_free_bulk(s->conf.drv, &m, 1);
	else
		s->stats.listener_replies++;
}

/* ---- handshake completion ------------------------------------------------ */

/* A connection's handshake completed (server: also confirmed). */
static void
on_handshake_done(struct dpq_shard *s, struct conn_slot *sl, uint64_t now)
{
	uint8_t tok[DPQ_TOKEN_MAX_LEN];
	ssize_t n;

	/* RFC 9000 §8.1.3: a token for the client's next connection, bound
	 * to the address it now has proved (its active path's). */
	if (!s->conf.new_token || s->conf.listener == NULL ||
	    !dpq_conn_is_server(sl->c))
		return;
	n = dpq_listener_new_token(s->conf.listener,
			&dpq_conn_active_tuple(sl->c)->peer, now, tok,
			sizeof(tok));
	if (n > 0 && dpq_conn_send_new_token(sl->c, tok, (size_t)n) == 0)
		s->stats.new_tokens_sent++;
	explicit_bzero(tok, sizeof(tok));
}

void
dpq_shard_set_new_token(struct dpq_shard *s, bool on)
{
	s->conf.new_token = on;
}

void
dpq_shard_set_max_early_data(struct dpq_shard *s, uint64_t bytes)
{
	s->conf.conn.max_early_data = bytes;
}

/* ---- receive ------------------------------------------------------------- */

/* The DCID of a datagram's first packet, or false. */
static bool
peek_dcid(const struct dpq_shard *s, const uint8_t *d, size_t len,
		const uint8_t **cid, size_t *cid_len)
{
	if (len < 1)
		return false;
	if (d[0] & 0x80) {
		if (len < 6 || d[5] > DPQ_MAX_CID_LEN || len < 6u + d[5])
			return false;
		*cid = d + 6;
		*cid_len = d[5];
		return true;
	}
	if (len < 1u + s->conf.conn.scid_len)
		return false;
	*cid = d + 1;
	*cid_len = s->conf.conn.scid_len;
	return true;
}

static bool
lookup(struct dpq_shard *s, const uint8_t *cid, size_t len, uint32_t *idx)
{
	struct cid_key k;
	void *data;

	if (len == 0 || len > DPQ_MAX_CID_LEN)
		return false;
	key_of(&k, cid, len);
	if (rte_hash_lookup_data(s->cids, &k, &data) < 0)
		return false;
	*idx = (uint32_t)(uintptr_t)data;
	return s->slots[*idx].c != NULL;
}

/* A datagram dropped without a connection: a rate-limited DEBUG line
 * (off by default: dpquic.peer:debug); the counters say how many. */
static void
log_drop(struct dpq_shard *s, const struct dpq_rx_info *ri, const char *why,
		size_t len, uint64_t now)
{
	struct dpq_addr pa;
	char a[64];

	if (!rte_log_can_log(dpq_logtype_peer, RTE_LOG_DEBUG))
		return;
	from_netaddr(&ri->tuple.peer, &pa);
	dpq_shard_log_drop(&s->warn_drop, s->conf.shard_id,
			dpq_addr_format(&pa, a, sizeof(a)), why, len, now);
}

/* What a peer did wrong before it had a connection: a rate-limited
 * WARNING on dpquic.peer (shard_log.h). */
static void
log_peer_warn(struct dpq_shard *s, const struct dpq_rx_info *ri,
		const char *what, uint64_t now)
{
	struct dpq_addr pa;
	char a[64];

	if (!rte_log_can_log(dpq_logtype_peer, RTE_LOG_WARNING))
		return;
	from_netaddr(&ri->tuple.peer, &pa);
	dpq_shard_log_peer_warn(&s->warn, s->conf.shard_id,
			dpq_addr_format(&pa, a, sizeof(a)), what, now);
}

/* Something only a flood of new connections makes the shard do (Retry
 * because many handshakes are half-open, replies over their rate,
 * eviction, refusal) may have happened: a WARNING summary now and then,
 * so that an operator sees the flood at the default log level. */
static void
log_flood(struct dpq_shard *s, uint64_t now)
{
	const struct dpq_listener_stats *ls;
	struct dpq_halfopen *ho;
	struct dpq_shard_flood f;

	if (s->conf.listener == NULL ||
	    !rte_log_can_log(dpq_logtype_peer, RTE_LOG_WARNING))
		return;
	ls = dpq_listener_stats(s->conf.listener);
	f.retry_halfopen = ls->retry_halfopen;
	f.reply_rate_drops = ls->outcome[DPQ_LO_DROP_REPLY_RATE];
	f.evicted = s->stats.conns_evicted;
	f.refused = s->stats.conns_refused;
	ho = dpq_listener_halfopen(s->conf.listener);
	dpq_shard_log_flood(&s->flood_log, s->conf.shard_id, &f,
			ho == NULL ? 0 : dpq_halfopen_count(ho), now);
}

/* A new server connection is half-open until its handshake completes
 * (dataplane/server/halfopen.h): evict the victim the tracker named (the
 * oldest half-open connection of the peer's prefix or of the shard, which
 * never completed in all that time), then track the new one. */
static void
halfopen_track(struct dpq_shard *s, struct dpq_halfopen *ho,
		struct dpq_conn *c, enum dpq_halfopen_verdict verdict,
		uint32_t victim, const struct dpq_netaddr *peer)
{
	uint32_t idx = (uint32_t)(uintptr_t)dpq_conn_owner(c);

	if (ho == NULL)
		return;
	if (verdict == DPQ_HO_EVICT && victim != idx &&
	    dpq_halfopen_tracked(ho, victim) && s->slots[victim].c != NULL) {
		s->stats.conns_evicted++;
		tx_flush(s);	/* sealed ops may point at its keys */
		slot_free(s, victim, "evicted (half-open cap)");
	}
	if (dpq_halfopen_add(ho, idx, peer) != 0)
		s->stats.halfopen_untracked++;
	else if (dpq_conn_peer_validated(c))
		dpq_halfopen_proven(ho, idx);	/* a token: RFC 9000 §8.1.3 */
	s->stats.halfopen = dpq_halfopen_count(ho);
}

/* The connections' state is charged to the shard's budget but never
 * refused (engine/membudget.h); buffers are refused once it is spent. A
 * handshake started then cannot buffer its CRYPTO data and fails half
 * way (idle connections by the ten thousand fill a budget): refuse the
 * new connection at its first datagram instead, while existing ones keep
 * what they have. */
#define CONN_BUDGET_RESERVE	(64u << 10)

static bool
budget_spent(const struct dpq_shard *s)
{
	return s->budget.limit != 0 &&
		s->budget.used + CONN_BUDGET_RESERVE > s->budget.limit;
}

/* A datagram for no known connection. */
static void
rx_unknown(struct dpq_shard *s, struct rte_mbuf *m, const uint8_t *cid,
		size_t cid_len, uint64_t now)
{
	struct dpq_pkt_meta *meta = dpq_pkt_meta(m);
	uint8_t *d = rte_pktmbuf_mtod(m, uint8_t *);
	struct dpq_listener_result r;
	struct dpq_conn_init in = { 0 };
	struct dpq_rx_info ri;
	enum dpq_halfopen_verdict verdict;
	struct dpq_halfopen *ho;
	struct dpq_conn *c;
	uint32_t victim = 0;

	/* Another shard's connection (its CID says so): hand it over. */
	if (s->conf.handoff != NULL && s->conf.cid_shard != NULL &&
	    s->conf.nb_shards > 1) {
		uint8_t owner = s->conf.cid_shard(s->conf.cid_arg, cid,
				cid_len);

		if (owner != s->conf.shard_id && owner < s->conf.nb_shards) {
			if (rte_ring_enqueue(s->conf.handoff[owner], m) == 0) {
				s->stats.handoff_out++;
				return;
			}
			s->stats.handoff_full++;
			rte_pktmbuf_free(m);
			return;
		}
	}
	if (s->conf.listener == NULL) {
		s->stats.no_conn++;
		rte_pktmbuf_free(m);
		return;
	}
	rx_info_of(m, &ri);
	switch (dpq_listener_on_datagram(s->conf.listener, d, m->data_len,
			&ri.tuple.peer, now, &r)) {
	case DPQ_LISTEN_REPLY:
		s->stats.unvalidated_rx += m->data_len;
		s->stats.unvalidated_tx += r.reply_len;
		tx_reply(s, r.reply, r.reply_len, meta);
		if (r.outcome == DPQ_LO_CLOSE_INVALID_TOKEN)
			log_peer_warn(s, &ri, "Initial with an invalid Retry "
				"token (forged, expired, or sent from another "
				"address): closed with INVALID_TOKEN", now);
		else if (r.outcome == DPQ_LO_RETRY)
			log_flood(s, now);
		break;
	case DPQ_LISTEN_ACCEPT:
		ho = dpq_listener_halfopen(s->conf.listener);
		/* One slot stays free for trying a new connection: a victim
		 * is evicted only once the new Initial proved to decrypt,
		 * so forged Initials cannot evict anyone. */
		verdict = ho == NULL ? DPQ_HO_ADMIT :
			dpq_halfopen_admit(ho, &ri.tuple.peer, s->nfree <= 1,
				&victim);
		if ((verdict == DPQ_HO_REFUSE && s->nfree == 0) ||
		    budget_spent(s)) {
			s->stats.conns_refused++;
			s->stats.unvalidated_rx += m->data_len;
			log_flood(s, now);
			break;
		}
		in.scid = r.scid;
		in.dcid = r.initial_dcid;
		in.peer_scid = r.client_scid;
		in.after_retry = r.retried;
		in.odcid = r.odcid;
		memcpy(in.reset_token, r.sreset_token, DPQ_RESET_TOKEN_LEN);
		in.now = now;
		in.tuple = ri.tuple;
		c = conn_new(s, &in);
		if (c == NULL) {
			s->stats.unvalidated_rx += m->data_len;
			log_flood(s, now);
			break;
		}
		/* Found by the client's first DCID until it switches. */
		slot_add_cid(s, (uint32_t)(uintptr_t)dpq_conn_owner(c),
				&r.initial_dcid);
		if (dpq_conn_recv(c, d, m->data_len, &ri, now) == 0) {
			/* Nothing in it decrypted: a forged or corrupted
			 * Initial must not hold a connection slot (RFC 9000
			 * §21.6); free it at once. */
			s->stats.conns_unopened++;
			slot_release(s, (uint32_t)(uintptr_t)dpq_conn_owner(c),
					false, "first datagram not opened");
		} else {
			s->stats.conns_created++;
			halfopen_track(s, ho, c, verdict, victim,
					&ri.tuple.peer);
			log_conn(s, c, DPQ_SHARD_EV_OPEN);
			if (verdict == DPQ_HO_EVICT)
				log_flood(s, now);
		}
		break;
	default:
		s->stats.unvalidated_rx += m->data_len;
		s->stats.no_conn++;
		/* Counted by the listener; one line for whoever debugs a
		 * peer that gets no answer (dpquic.peer:debug). */
		log_drop(s, &ri, dpq_listen_outcome_str(r.outcome),
				m->data_len, now);
		if (r.outcome == DPQ_LO_DROP_REPLY_RATE)
			log_flood(s, now);
		break;
	}
	rte_pktmbuf_free(m);
}

/* The 1-RTT packets of a burst, opened together. */
struct rx_batch {
	struct dpq_open_op ops[DPQ_SHARD_BURST];
	struct dpq_pkt_hdr hdr[DPQ_SHARD_BURST];
	uint32_t slot[DPQ_SHARD_BURST];
	struct rte_mbuf *m[DPQ_SHARD_BURST];
	unsigned int n;
};

static void
rx_batch_run(struct dpq_shard *s, struct rx_batch *b, uint64_t now)
{
	unsigned int i;

	if (b->n == 0)
		return;
	dpq_crypto_unprotect_hp_burst(s->crypto, b->ops, (uint16_t)b->n);
	for (i = 0; i < b->n; i++)
		dpq_conn_rx_select_key(s->slots[b->slot[i]].c, &b->hdr[i],
				&b->ops[i]);
	dpq_crypto_open_burst(s->crypto, b->ops, (uint16_t)b->n);
	/* The plaintexts stay in their mbufs until the whole batch is
	 * processed: the XOR-FEC receiver accumulates them in one pass. */
	for (i = 0; i < b->n; i++)
		dpq_conn_rx_begin(s->slots[b->slot[i]].c);
	for (i = 0; i < b->n; i++) {
		struct conn_slot *sl = &s->slots[b->slot[i]];
		struct rte_mbuf *m = b->m[i];
		struct dpq_rx_info ri;

		sl->last_active = now;
		ready_add(s, sl);
		if (b->ops[i].status != 0) {
			/* A 1-RTT packet that fails may be a stateless reset
			 * (RFC 9000 §10.3.1); a 0-RTT one is just dropped. */
			dpq_conn_rx_failed(sl->c, b->ops[i].pkt,
					m->data_len, now);
		} else {
			/* The connection decides what a new source address
			 * means (RFC 9000 §9.3: validate it first). */
			rx_info_of(m, &ri);
			dpq_conn_rx_process(sl->c, &b->hdr[i], &b->ops[i],
					m->data_len, &ri, now);
		}
	}
	for (i = 0; i < b->n; i++)
		dpq_conn_rx_end(s->slots[b->slot[i]].c);
	for (i = 0; i < b->n; i++)
		rte_pktmbuf_free(b->m[i]);
	s->stats.rx_batched += b->n;
	b->n = 0;
}

static void
rx_one(struct dpq_shard *s, struct rx_batch *b, struct rte_mbuf *m,
		uint64_t now)
{
	uint8_t *d = rte_pktmbuf_mtod(m, uint8_t *);
	struct dpq_rx_info ri;
	const uint8_t *cid;
	size_t cid_len;
	uint32_t idx;

	s->stats.rx_pkts++;
	s->stats.rx_bytes += m->data_len;
	if (!peek_dcid(s, d, m->data_len, &cid, &cid_len)) {
		s->stats.no_conn++;
		rx_info_of(m, &ri);
		log_drop(s, &ri, "no connection ID", m->data_len, now);
		rte_pktmbuf_free(m);
		return;
	}
	if (!lookup(s, cid, cid_len, &idx)) {
		rx_unknown(s, m, cid, cid_len, now);
		return;
	}
	/* Short-header packets of established connections, and datagrams
	 * that are one 0-RTT packet (its key is the connection's like any
	 * other, RFC 9001 §5), join the AEAD batch; the rest of the
	 * handshake goes one datagram at a time (and 0-RTT that waits for
	 * its key is held by dpq_conn_recv). */
	if (((!(d[0] & 0x80) &&
	      dpq_conn_state(s->slots[idx].c) == DPQ_CONN_ESTABLISHED) ||
	     (d[0] & 0xb0) == 0x90) &&
	    dpq_conn_rx_prepare(s->slots[idx].c, d, m->data_len,
			&b->hdr[b->n], &b->ops[b->n]) == 0 &&
	    (b->hdr[b->n].type == DPQ_PKT_1RTT ||
	     (b->hdr[b->n].type == DPQ_PKT_0RTT &&
	      b->hdr[b->n].pkt_len == m->data_len))) {
		b->slot[b->n] = idx;
		b->m[b->n] = m;
		if (++b->n == DPQ_SHARD_BURST)
			rx_batch_run(s, b, now);
		return;
	}
	s->slots[idx].last_active = now;
	ready_add(s, &s->slots[idx]);
	rx_info_of(m, &ri);
	dpq_conn_recv(s->slots[idx].c, d, m->data_len, &ri, now);
	/* A half-open connection whose client just proved its address (a
	 * Handshake packet, RFC 9000 §8.1) is a real client's: no longer
	 * the first victim of a flood (dataplane/server/halfopen.h). */
	if ((d[0] & 0x80) && s->conf.listener != NULL &&
	    !s->slots[idx].hs_counted &&
	    dpq_conn_peer_validated(s->slots[idx].c))
		dpq_halfopen_proven(dpq_listener_halfopen(s->conf.listener),
				idx);
	rte_pktmbuf_free(m);
}

/* Touch one connection taken off the ready list: deferred work and due
 * timers, build, and back on the list if it has more to send. Returns
 * the datagrams built; the slot may be free afterwards. */
static unsigned int
conn_touch(struct dpq_shard *s, uint32_t idx, uint64_t now)
{
	struct conn_slot *sl = &s->slots[idx];
	unsigned int n = 0;
	bool more = false;

	s->stats.conns_touched++;
	dpq_conn_poll(sl->c, now);
	if (!sl->hs_counted && dpq_conn_handshake_confirmed(sl->c)) {
		struct dpq_conn_stats cs;

		dpq_conn_get_stats(sl->c, &cs);
		sl->hs_counted = true;
		/* No longer half-open (issue 7). */
		if (s->conf.listener != NULL) {
			struct dpq_halfopen *ho = dpq_listener_halfopen(
					s->conf.listener);

			dpq_halfopen_remove(ho, idx, true);
			s->stats.halfopen = ho == NULL ? 0 :
				dpq_halfopen_count(ho);
		}
		s->stats.handshakes_done++;
		s->stats.handshake_us_sum += cs.handshake_us;
		log_conn(s, sl->c, DPQ_SHARD_EV_HANDSHAKE);
		on_handshake_done(s, sl, now);
	}
	if (dpq_conn_state(sl->c) != DPQ_CONN_CLOSED)
		n = conn_transmit(s, idx, now, &more);
	if (dpq_conn_state(sl->c) == DPQ_CONN_CLOSED) {
		/* Seal what is queued first: it may use its keys. */
		tx_flush(s);
		slot_free(s, idx, "closed");
		return n;
	}
	if (more)
		ready_add(s, sl);
	return n;
}

/* The connections touched in one poll, for work after the last seal. */
struct touched {
	uint32_t idx[DPQ_SHARD_READY_MAX];
	uint16_t gen[DPQ_SHARD_READY_MAX];
	unsigned int n;
};

/* Touch up to DPQ_SHARD_READY_MAX connections of the ready list, in the
 * order they were queued; those woken meanwhile wait for the next poll
 * (the list is taken as a whole first). */
static unsigned int
run_ready(struct dpq_shard *s, uint64_t now)
{
	struct ready_link todo, *l;
	struct touched t;
	unsigned int work = 0, i;

	if (s->ready.next == &s->ready)
		return 0;
	/* Take the list; s->ready collects what is queued from now on. */
	todo.next = s->ready.next;
	todo.prev = s->ready.prev;
	todo.next->prev = &todo;
	todo.prev->next = &todo;
	ready_init(&s->ready);
	t.n = 0;
	while ((l = todo.next) != &todo && t.n < DPQ_SHARD_READY_MAX) {
		struct conn_slot *sl = slot_of_link(l);
		uint32_t idx = (uint32_t)(sl - s->slots);

		ready_del(sl);
		t.idx[t.n] = idx;
		t.gen[t.n++] = sl->gen;
		work += conn_touch(s, idx, now);
	}
	/* Over the budget: the rest goes first next time. */
	if (todo.next != &todo) {
		todo.prev->next = s->ready.next;
		s->ready.next->prev = todo.prev;
		todo.next->prev = &s->ready;
		s->ready.next = todo.next;
	}
	tx_flush(s);
	/* After every seal: deferred key discards (dpq_conn_tx_done), then
	 * each timer at the connection's next timeout. */
	for (i = 0; i < t.n; i++) {
		struct conn_slot *sl = &s->slots[t.idx[i]];

		if (sl->c == NULL || sl->gen != t.gen[i])
			continue;	/* freed */
		dpq_conn_tx_done(sl->c, now);
		/* Quiet for park_after: its memory shrinks. dpq_conn_park
		 * refuses while anything is pending (a handshake not yet
		 * confirmed, data in flight...): then try again only after
		 * another park_after, never at every tick. */
		if (s->park_after != UINT64_MAX && !ready_linked(sl) &&
		    now - sl->last_active >= s->park_after &&
		    !dpq_conn_parked(sl->c)) {
			if (dpq_conn_park(sl->c) == 0)
				s->stats.conns_parked++;
			else
				sl->last_active = now;
		}
		timer_rearm(s, sl, now);
	}
	return work;
}

unsigned int
dpq_shard_poll(struct dpq_shard *s, uint64_t now)
{
	struct rte_mbuf *pkts[DPQ_SHARD_BURST];
	struct rx_batch batch;
	unsigned int work = 0, i, n;

	s->now = now;
	s->polled = true;
	batch.n = 0;
	n = dpq_driver_rx_burst(s->conf.drv, s->conf.queue, pkts,
			DPQ_SHARD_BURST);
	for (i = 0; i < n; i++)
		rx_one(s, &batch, pkts[i], now);
	work += n;
	if (s->conf.handoff != NULL) {
		n = rte_ring_dequeue_burst(s->conf.handoff[s->conf.shard_id],
				(void **)pkts, DPQ_SHARD_BURST, NULL);
		s->stats.handoff_in += n;
		for (i = 0; i < n; i++)
			rx_one(s, &batch, pkts[i], now);
		work += n;
	}
	rx_batch_run(s, &batch, now);

	/* Replies of the handshake service (they wake their connections). */
	if (s->conf.hs.poll != NULL)
		s->conf.hs.poll(s->conf.hs.arg, s);

	/* Timers due: their connections join the ready list. */
	s->stats.timers_fired += dpq_wheel_advance(&s->wheel, now,
			shard_timer, s);
	work += run_ready(s, now);
	return work;
}

void
dpq_shard_set_listener(struct dpq_shard *s, struct dpq_listener *l)
{
	s->conf.listener = l;
	/* The half-open tracker names connections by slot. */
	if (l != NULL && dpq_listener_set_slots(l, s->conf.max_conns) != 0)
		s->conf.listener = NULL;
}

void
dpq_shard_get_stats(const struct dpq_shard *s, struct dpq_shard_stats *st)
{
	*st = s->stats;
	st->mem_used = s->budget.used;
	st->mem_peak = s->budget.peak;
	st->mem_budget = s->budget.limit;
	st->mem_refused = s->budget.refused;
	if (s->conf.listener != NULL &&
	    dpq_listener_halfopen(s->conf.listener) != NULL)
		st->halfopen = dpq_halfopen_count(
				dpq_listener_halfopen(s->conf.listener));
}

uint16_t
dpq_shard_id(const struct dpq_shard *s)
{
	return s->conf.shard_id;
}

struct dpq_crypto *
dpq_shard_crypto(struct dpq_shard *s)
{
	return s->crypto;
}

uint32_t
dpq_shard_conn_count(const struct dpq_shard *s)
{
	return s->nlive;
}

struct dpq_conn *
dpq_shard_conn_at(struct dpq_shard *s, uint32_t i)
{
	return i < s->nlive ? s->slots[s->live[i]].c : NULL;
}

void
dpq_shard_conn_peer(const struct dpq_shard *s, const struct dpq_conn *c,
		struct dpq_addr *out)
{
	(void)s;
	/* The connection's active path: it, not the shard, follows the
	 * peer (RFC 9000 §9). */
	from_netaddr(&dpq_conn_active_tuple(c)->peer, out);
}

uint64_t
dpq_shard_next_event(const struct dpq_shard *s)
{
	if (s->ready.next != &s->ready)
		return s->now;
	return dpq_wheel_next_event(&s->wheel);
}
