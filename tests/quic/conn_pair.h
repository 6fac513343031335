/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A client and a server dpq_conn joined by a simulated link, in virtual
 * time: each direction delays datagrams and drops them by a seeded random
 * draw or an explicit pattern. Handshakes run through dpq_hs_direct.
 *
 * Datagrams carry addresses: the client is at caddr, the server at
 * saddr. A NAT can rewrite the client's source address (nat_on: c2s
 * sources become nat, s2c datagrams to nat reach the client), and
 * datagrams the server sends to any other address are counted as stray
 * (bytes to a spoofed address, RFC 9000 §9.3.1), not delivered.
 */
#ifndef DPQ_TESTS_CONN_PAIR_H
#define DPQ_TESTS_CONN_PAIR_H

#include <stdbool.h>
#include <stdint.h>

#include "control/tls/hs_direct.h"
#include "dataplane/crypto/crypto.h"
#include "dataplane/engine/membudget.h"
#include "dataplane/quic/conn.h"
#include "dataplane/quic/trace.h"

#define PAIR_QUEUE 4096
#define PAIR_MTU 1500

struct pair_dgram {
	uint64_t at;
	uint16_t len;
	uint8_t ecn;		/* IP ECN codepoint it carries */
	struct dpq_netaddr src, dst;
	uint8_t data[PAIR_MTU];
};

struct pair_link {
	struct pair_dgram *q;	/* ring of PAIR_QUEUE */
	unsigned int head, tail;
	uint64_t delay_us;
	double loss;		/* probability */
	uint64_t sent, dropped, delivered, bytes;
	/* drop the datagrams whose index (from 0) is in drop_mask bits */
	uint64_t drop_mask;
	bool blackhole;
	/* drop every datagram of at least this many bytes (0: none) */
	uint16_t drop_from_len;
	/* drop the next datagram sent (set from a trace hook while the
	 * sender builds it), then clear */
	bool drop_next;
	/* Datagrams sent at one virtual instant: the current run and the
	 * longest since max_run was last cleared (pacing tests). */
	uint64_t run_at;
	uint32_t run, max_run;
	/* ECN on the path: bleach clears every codepoint; ce_permille of
	 * the ECT packets are marked CE; counts of what went through. */
	bool ecn_bleach;
	unsigned int ce_permille;
	uint64_t ect0_seen, ce_marked;
	/* The first 64 datagrams sent (dropped or not): length and first
	 * byte (a long header's type bits are not protected). */
	uint16_t log_len[64];
	uint8_t log_first[64];
};

/* A CRYPTO delivery waiting in the asynchronous handshake service. */
struct pair_hs_msg {
	uint64_t at;
	struct dpq_conn *c;
	enum dpq_epoch epoch;
	size_t len;
	uint8_t *data;
};

#define PAIR_HS_QUEUE 64

struct pair {
	struct dpq_crypto *crypto;
	struct dpq_tls_ctx *sctx, *cctx;
	struct dpq_conn *client, *server;
	struct dpq_conn_conf cconf, sconf;
	const struct dpq_app_ops *capp, *sapp;
	/* Server ALPNs, NULL-terminated (NULL: "hq-interop"); set before
	 * pair_start. */
	const char *const *server_alpns;
	/* Server memory budget (NULL: libc, no budget); set before
	 * pair_start. Its allocators live here. */
	struct dpq_membudget *server_budget;
	struct dpq_mem server_state_mem, server_buf_mem;
	/* Server TLS key log file (NULL: none); set before pair_start. */
	const char *server_keylog;
	void *capp_ctx, *sapp_ctx;
	struct pair_link c2s, s2c;
	uint64_t now;
	uint64_t rng;
	bool server_refused;
	/* Server handshake service: 0 runs TLS inside dpq_conn_recv (as
	 * the kernel-UDP client does); > 0 answers that many us later, as
	 * dpquicd's management thread does (set before pair_start). */
	uint64_t server_hs_delay_us;
	/* Deliver the datagrams due at one time between dpq_conn_rx_begin
	 * and dpq_conn_rx_end, as a shard's batch (their buffers stay
	 * valid until then). */
	bool rx_batch;
	struct pair_hs_msg hsq[PAIR_HS_QUEUE];
	unsigned int hsq_head, hsq_tail;
	/* Addresses (pair_init: 198.18.0.1:40000 and 198.18.0.2:4433). */
	struct dpq_netaddr caddr, saddr;
	bool nat_on;
	bool nat_only;		/* the client's own address is gone:
				 * s2c datagrams to it are lost */
	struct dpq_netaddr nat;
	/* Server datagrams to neither caddr nor the NAT address. */
	uint64_t stray_dgrams, stray_bytes;
	struct dpq_netaddr stray_last;
	/* CIDs made for and retired by each side (struct dpq_cid_ops);
	 * no_cids (before pair_start): give none. */
	bool no_cids;
	uint64_t cids_made[2], cids_dropped[2];	/* [is_server] */
	/* Client: token for its first Initial (NEW_TOKEN of an earlier
	 * connection); set before pair_start. */
	const uint8_t *ctoken;
	uint16_t ctoken_len;
	/* The token of the Initial that created the server. */
	uint8_t initial_token[DPQ_CONN_TOKEN_MAX];
	size_t initial_token_len;
	/* Resumption and 0-RTT (set before pair_start): the server's
	 * ticket options, the client's session and remembered transport
	 * parameters; the last ticket the client received. */
	struct dpq_tls_session_opts sopts, copts;
	const uint8_t *ctp;
	uint16_t ctp_len;
	uint8_t ticket[4096];
	size_t ticket_len;
	bool ticket_early;
	/* A server connection that closed is freed and the client's next
	 * Initial makes another, as dpquicd's listener does (set before
	 * pair_start; not with rx_batch or server_hs_delay_us). */
	bool server_respawn;
	unsigned int server_respawns;
	/* Server trace hook from its first datagram (set before
	 * pair_start). */
	dpq_trace_fn *strace;
	void *strace_ctx;
};

/* Set up contexts and the client; suite 0 = any; alpn for both. */
void pair_init(struct pair *p, uint16_t suite, const char *calpn,
		uint64_t delay_us, double loss, uint64_t seed);
/* Create the client (after setting cconf/sconf and the app hooks). */
void pair_start(struct pair *p);
void pair_free(struct pair *p);
/* Run until done(p) or max_us of virtual time passes; returns true if
 * done() became true. done NULL: run until both are idle. */
bool pair_run(struct pair *p, bool (*done)(struct pair *p, void *arg),
		void *arg, uint64_t max_us);

/* An IPv4 address a.b.c.d:port. */
void pair_addr4(struct dpq_netaddr *a, uint8_t a0, uint8_t a1, uint8_t a2,
		uint8_t a3, uint16_t port);
/* Deliver a datagram to the server as if sent from src (to saddr), at
 * once: what an attacker or a middlebox injects. Returns dpq_conn_recv's
 * result. */
int pair_inject_to_server(struct pair *p, const uint8_t *d, size_t len,
		const struct dpq_netaddr *src);

#endif
