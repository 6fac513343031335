/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpq_shard is one dataplane core's share of the endpoint (DESIGN §2): it
 * owns its connections and everything about them, and runs the loop
 *   receive a burst -> classify by destination CID (own connection, another
 *   shard's: hand over on its ring, unknown: the listener) -> batch header
 *   protection removal and AEAD for the 1-RTT packets of the burst ->
 *   process -> handshake replies -> timers due (a timing wheel) -> for
 *   each connection on the ready list: build datagrams -> seal them in one
 *   burst -> transmit.
 * Only connections that need it are touched (conn.h, wake-up contract):
 * a poll's cost does not grow with idle connections.
 * No locks on this path; connection handles that leave the shard are
 * (shard, slot, generation) numbers, never pointers.
 *
 * A client endpoint is a shard too (role client, no listener), which is
 * how dpquic-client drives the kernel UDP or DPDK driver.
 *
 * Thread: every function except dpq_shard_stats() is shard only.
 */
#ifndef DPQ_SHARD_SHARD_H
#define DPQ_SHARD_SHARD_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_ring.h>

#include "dataplane/quic/conn.h"
#include "dpquic/driver.h"

struct dpq_shard;
struct dpq_listener;

/* Default memory budget per shard (struct dpq_shard_conf.mem_budget). */
#define DPQ_SHARD_MEM_BUDGET	(256ull << 20)

/* Burst size of the loop. */
#define DPQ_SHARD_BURST 32
/* Connections touched per poll at most (the rest wait for the next). */
#define DPQ_SHARD_READY_MAX 256
/* Datagrams one connection builds per touch at most; with more to send
 * it queues again behind the others. */
#define DPQ_SHARD_CONN_TX 64

/* How a shard reaches its handshake service. */
struct dpq_shard_hs {
	const struct dpq_hs_ops *ops;	/* given to each connection */
	void *hs;
	/* Start the handshake of a new connection (ring: HS_NEW; direct:
	 * dpq_hs_direct_attach). Returns 0 or a negative errno. */
	int (*attach)(void *arg, struct dpq_conn *c, uint64_t handle);
	/* Apply the service's replies; lookup is dpq_shard_conn_by_handle. */
	void (*poll)(void *arg, struct dpq_shard *s);
	void *arg;
};

/* The application given to each connection. */
struct dpq_shard_app {
	const struct dpq_app_ops *ops;
	/* Per connection context: called after creation (may be NULL). */
	void *(*conn_ctx)(void *arg, struct dpq_conn *c);
	void (*conn_ctx_free)(void *arg, struct dpq_conn *c, void *ctx);
	void *arg;
};

struct dpq_shard_conf {
	uint16_t shard_id;
	uint16_t nb_shards;
	struct dpq_driver *drv;
	uint16_t queue;			/* driver queue of this shard */
	struct dpq_conn_conf conn;	/* role, limits */
	struct dpq_listener *listener;	/* server: decides new connections */
	struct dpq_shard_hs hs;
	struct dpq_shard_app app;
	uint32_t max_conns;		/* 0: 4096 */
	/* Memory budget of the shard's connections, bytes (0:
	 * DPQ_SHARD_MEM_BUDGET): stream and CRYPTO buffers stop there, and
	 * receive windows stop growing at half of it. */
	uint64_t mem_budget;
	/* A connection without traffic this long is parked (dpq_conn_park:
	 * its memory shrinks to what an idle one needs). 0: 1000 ms;
	 * UINT32_MAX: never. */
	uint32_t park_after_ms;
	/* Server: rings into every shard (index = shard id) for datagrams
	 * whose CID names another shard; NULL with one shard. */
	struct rte_ring **handoff;
	/* Server: send each client a NEW_TOKEN token once its handshake
	 * completes (RFC 9000 §8.1.3), sealed by the listener. */
	bool new_token;
	/* CID layout, to read the shard id of a DCID (server). */
	uint8_t (*cid_shard)(void *arg, const uint8_t *cid, size_t len);
	void *cid_arg;
	int socket_id;
};

/* Counters; the management thread reads them without locks. */
struct dpq_shard_stats {
	uint64_t rx_pkts, rx_bytes, tx_pkts, tx_bytes;
	uint64_t rx_batched;		/* 1-RTT packets opened in bursts */
	uint64_t conns_created, conns_closed, conns_active;
	uint64_t conns_refused;		/* table full or creation failed */
	uint64_t conns_unopened;	/* first Initial did not decrypt */
	uint64_t conns_evicted;		/* oldest half-open made room */
	uint64_t halfopen;		/* half-open connections now */
	uint64_t halfopen_untracked;	/* over the bound anyway (bug) */
	/* Memory of the shard's connections (engine/membudget.h). */
	uint64_t mem_used, mem_peak, mem_budget;
	uint64_t mem_refused;		/* buffer allocations refused */
	/* Bytes from / to addresses not validated (RFC 9000 §8.1): the
	 * listener's datagrams and replies, and closed connections' bytes
	 * before validation. */
	uint64_t unvalidated_rx, unvalidated_tx;
	uint64_t handoff_out, handoff_in, handoff_full;
	uint64_t no_conn;		/* unknown CID, listener dropped */
	uint64_t listener_replies;	/* VN, Retry, resets sent */
	uint64_t tx_alloc_fail, tx_seal_fail, tx_refused;
	uint64_t handshakes_done;
	uint64_t new_tokens_sent;	/* NEW_TOKEN tokens given to conns */
	uint64_t handshake_us_sum;
	/* Wake-ups: connections touched (datagram, timer, or woken) and
	 * timers fired. An idle connection adds to neither. */
	uint64_t conns_touched;
	uint64_t timers_fired;
	uint64_t conns_parked;		/* times a connection was parked */
	/* Why connections ended. */
	uint64_t closed_idle;		/* idle timeout (RFC 9000 §10.1) */
	uint64_t closed_handshake_timeout; /* handshake deadline passed */
	uint64_t closed_by_peer;	/* peer's CONNECTION_CLOSE or reset */
	uint64_t closed_app;		/* application close, either side */
	uint64_t closed_error;		/* we closed on a transport error */
	/* ... by transport error code 0x00..0x10, and TLS alerts. */
	uint64_t closed_error_code[17];
	uint64_t closed_crypto_error;
	/* 1-RTT key updates (RFC 9001 §6) of the connections that ended:
	 * started here, started by the peer and followed. */
	uint64_t key_updates, key_updates_peer;
	/* Paths and connection IDs (RFC 9000 §9, §5.1), summed over the
	 * connections that ended. */
	uint64_t path_migrations;	/* a connection changed path */
	uint64_t paths_validated;	/* PATH_RESPONSE matched */
	uint64_t paths_failed;		/* validation abandoned */
	uint64_t path_reverts;		/* back to the last validated one */
	uint64_t rx_unknown_path;	/* packets from a path not allowed */
	uint64_t cids_issued;		/* NEW_CONNECTION_ID sent */
	uint64_t cids_retired;		/* ours the peer retired */
	uint64_t cid_issue_fail;	/* no unique CID made (live) */
};

int dpq_shard_create(const struct dpq_shard_conf *conf,
		struct dpq_shard **out);
void dpq_shard_destroy(struct dpq_shard *s);

/* XOR-FEC settings of the connections created from now on (docs/fec.md):
 * the largest group they accept (0: extension off), what they send, and
 * speculative retransmission (DPQ_SPEC_*, spacing in us, 0: automatic).
 * Shard thread only (the daemon's mailbox). */
void dpq_shard_set_fec(struct dpq_shard *s, uint8_t max_group,
		const struct dpq_fec_policy *p, uint8_t spec_retx,
		uint32_t spec_spacing_us);

/* Server: the listener that decides about unknown CIDs (set before the
 * first poll; it uses this shard's crypto context). It also bounds the
 * shard's half-open connections (dpq_listener_set_slots() is called
 * here; on failure the shard accepts no connection). */
void dpq_shard_set_listener(struct dpq_shard *s, struct dpq_listener *l);

/* Server: turn NEW_TOKEN issuing on or off for connections that
 * complete their handshake from now on (a server config change). */
void dpq_shard_set_new_token(struct dpq_shard *s, bool on);
/* Server: the 0-RTT bytes new connections take (conn conf
 * max_early_data; a server config change). */
void dpq_shard_set_max_early_data(struct dpq_shard *s, uint64_t bytes);

/* One loop iteration at now (us). Returns the work done (packets in and
 * out), 0 when idle. */
unsigned int dpq_shard_poll(struct dpq_shard *s, uint64_t now);

/* Client: open a connection to peer. dcid is the random first DCID (8+
 * bytes); its handshake starts at once. Returns 0 and *out. */
int dpq_shard_connect(struct dpq_shard *s, const struct dpq_addr *peer,
		struct dpq_conn **out);
/* The same, with what a client remembers of the server (dpq_conn_init:
 * a NEW_TOKEN token, transport parameters for 0-RTT); NULLs: none. */
struct dpq_shard_connect_opts {
	const uint8_t *token;
	uint16_t token_len;
	const uint8_t *remembered_tp;
	uint16_t remembered_tp_len;
};
int dpq_shard_connect_opts(struct dpq_shard *s, const struct dpq_addr *peer,
		const struct dpq_shard_connect_opts *o, struct dpq_conn **out);

/* The connection with this handle, or NULL (closed, slot reused). */
struct dpq_conn *dpq_shard_conn_by_handle(struct dpq_shard *s,
		uint64_t handle);
uint64_t dpq_shard_conn_handle(const struct dpq_shard *s,
		const struct dpq_conn *c);
void dpq_shard_get_stats(const struct dpq_shard *s,
		struct dpq_shard_stats *st);
uint16_t dpq_shard_id(const struct dpq_shard *s);
struct dpq_crypto *dpq_shard_crypto(struct dpq_shard *s);
/* Number of live connections. */
uint32_t dpq_shard_conn_count(const struct dpq_shard *s);
/* The i-th live connection, 0 <= i < dpq_shard_conn_count() (listings,
 * closing them all); the order changes as connections come and go. */
struct dpq_conn *dpq_shard_conn_at(struct dpq_shard *s, uint32_t i);
/* The peer address a connection sends to now (its active path). */
void dpq_shard_conn_peer(const struct dpq_shard *s, const struct dpq_conn *c,
		struct dpq_addr *out);
/* When the shard next has work without receiving anything: the time of
 * its earliest timer (no later than it), the latest poll's now when
 * connections wait on the ready list, UINT64_MAX when neither. A loop
 * with nothing to receive may sleep until then. */
uint64_t dpq_shard_next_event(const struct dpq_shard *s);

/* Monotonic microseconds from the TSC (the shard's clock). */
uint64_t dpq_shard_now_us(void);

#endif /* DPQ_SHARD_SHARD_H */
