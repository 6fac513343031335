/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpq_conn is one QUIC v1 connection, client or server (RFC 9000, 9001,
 * 9002): packet number spaces, CRYPTO streams, ACKs, loss recovery and
 * congestion control, streams with flow control, closing and draining.
 *
 * It does no I/O and reads no clock: every entry point takes now (us) and
 * works on caller buffers. TLS does not run here either: the connection
 * hands the CRYPTO bytes it receives to a handshake service (struct
 * dpq_hs_ops: the management thread in the daemon, a direct GnuTLS adapter
 * in tests and clients) and takes back handshake bytes, secrets, the
 * peer's transport parameters and the outcome through dpq_conn_hs_*().
 *
 * Receive, one datagram: dpq_conn_recv(). A shard that batches AEAD over a
 * burst uses the three steps it is made of instead:
 *   dpq_conn_rx_prepare()  header parsed, op->key/largest_pn set;
 *   dpq_crypto_unprotect_hp_burst(); dpq_conn_rx_select_key();
 *   dpq_crypto_open_burst(); dpq_conn_rx_process().
 * Send: dpq_conn_build_burst() builds up to n datagrams and leaves their
 * seal ops to the caller's burst; dpq_conn_send() builds and seals one.
 *
 * Paths (RFC 9000 §8.2, §9): the connection owns its addresses. Every
 * received datagram comes with its tuple (local and peer address), every
 * built datagram says which tuple to send it on; the owner never keeps or
 * changes a peer address itself. A peer's new address is validated
 * (PATH_CHALLENGE) and limited to 3x the bytes received from it until it
 * is; a failed validation reverts to the last validated address.
 *
 * Wake-up contract (what an owner such as the shard may rely on, so that
 * it touches only the connections that need it, never every connection
 * per loop): after any call into the connection, the owner runs
 * dpq_conn_poll() and dpq_conn_build_burst() until it builds fewer than
 * asked, then reads
 * dpq_conn_next_timeout() and calls again no later than then. Besides
 * that, a connection needs its owner only
 *   - when a datagram for it arrives (dpq_conn_recv or the rx steps);
 *   - when it calls the wake hook of struct dpq_conn_init: every entry
 *     point through which the handshake service (dpq_conn_hs_*) or the
 *     application (stream calls, dpq_conn_close) can create work does,
 *     so an application may write from outside a callback;
 * next_timeout covers every time-driven need (idle, loss and PTO, ACK
 * deadlines, closing and draining, pacing). dpq_conn_wants_send() says
 * whether a build would produce a datagram now.
 *
 * Thread: a connection belongs to one shard (shard only), except that the
 * dpq_conn_hs_*() calls arrive there as messages from the handshake
 * service.
 *
 * Return codes: 0 or a negative errno for API misuse (-EINVAL, -ENOMEM,
 * -EAGAIN would block, -ENOENT no such stream, -EPIPE stream or
 * connection closed). A peer's protocol violation never surfaces as a
 * return code: the connection closes with the transport error (see
 * dpq_conn_close_info()).
 */
#ifndef DPQ_QUIC_CONN_H
#define DPQ_QUIC_CONN_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "dataplane/crypto/crypto.h"
#include "dataplane/engine/cc.h"
#include "dataplane/engine/mem.h"
#include "dataplane/engine/membudget.h"
#include "dataplane/engine/netaddr.h"
#include "dataplane/engine/packet.h"
#include "dataplane/engine/tparams.h"
#include "dataplane/engine/wire.h"
#include "dataplane/fec/fec.h"

struct dpq_conn;

/* A network path as one endpoint sees it (RFC 9000 §9): our address and
 * the peer's. local.family 0 means "the driver's own address": a tuple
 * with it matches any local address of a received datagram. */
struct dpq_tuple {
	struct dpq_netaddr local;
	struct dpq_netaddr peer;
};

/* What the driver says about a received datagram. */
struct dpq_rx_info {
	struct dpq_tuple tuple;	/* local = its destination, peer = source */
	uint8_t ecn;		/* ECN bits of its IP header */
};

/* One datagram built by dpq_conn_build_burst(). */
struct dpq_tx_dgram {
	uint8_t *buf;		/* in: where to build it */
	uint16_t cap;		/* in: room at buf, tags included */
	uint16_t len;		/* out: datagram length, tags included */
	uint8_t nops;		/* out: its seal ops (consecutive in ops[]) */
	uint8_t ecn;		/* out: ECN codepoint to send with */
	struct dpq_tuple tuple;	/* out: send from local to peer */
};

/* Encryption levels, numbered as GnuTLS and control/tls/tls.h do. */
enum dpq_epoch {
	DPQ_EPOCH_INITIAL = 0,
	DPQ_EPOCH_0RTT = 1,
	DPQ_EPOCH_HANDSHAKE = 2,
	DPQ_EPOCH_1RTT = 3,
	DPQ_EPOCH_COUNT = 4,
};

/* Connection states; dpq_conn_set_state() is their only writer. */
enum dpq_conn_state {
	DPQ_CONN_HANDSHAKING = 0,	/* keys being established */
	DPQ_CONN_ESTABLISHED,		/* handshake complete (RFC 9001 §4.1.1) */
	DPQ_CONN_CLOSING,		/* we sent CONNECTION_CLOSE (§10.2.1) */
	DPQ_CONN_DRAINING,		/* peer sent it (§10.2.2) */
	DPQ_CONN_CLOSED,		/* nothing more to send or receive */
	DPQ_CONN_STATE_COUNT,
};

const char *dpq_conn_state_str(enum dpq_conn_state s);

/* What the handshake service offers a connection (mgmt thread side). */
struct dpq_hs_ops {
	/* CRYPTO bytes the peer sent at epoch, in stream order. Returns 0;
	 * a non-zero return closes with INTERNAL_ERROR (e.g. ring full and
	 * the bytes could not be queued). */
	int (*recv)(void *hs, struct dpq_conn *c, enum dpq_epoch epoch,
			const uint8_t *data, size_t len);
	/* The connection is gone: drop its TLS state. */
	void (*release)(void *hs, struct dpq_conn *c);
};

/* Application callbacks, run on the shard inside dpq_conn_* calls. */
struct dpq_app_ops {
	/* The handshake completed; alpn is the negotiated protocol. */
	void (*on_established)(struct dpq_conn *c, const char *alpn);
	/* The peer opened a stream (before its first on_stream_data). */
	void (*on_stream_open)(struct dpq_conn *c, uint64_t id);
	/* Stream data (or FIN) is readable with dpq_conn_stream_read(). */
	void (*on_stream_data)(struct dpq_conn *c, uint64_t id);
	/* A write that was cut short may now go on. */
	void (*on_stream_writable)(struct dpq_conn *c, uint64_t id);
	/* The peer reset its sending side (RESET_STREAM) or asked us to
	 * stop (STOP_SENDING, stop = true). */
	void (*on_stream_reset)(struct dpq_conn *c, uint64_t id,
			uint64_t app_error, bool stop);
	/* Both directions finished; the stream is freed after this. */
	void (*on_stream_closed)(struct dpq_conn *c, uint64_t id);
	/* The connection entered closing/draining or closed at once. */
	void (*on_closed)(struct dpq_conn *c);
	/* Optional: application data may flow before on_established
	 * (RFC 9001 §4.6). Client: 0-RTT keys are here and the server's
	 * remembered limits apply: requests written now leave in 0-RTT
	 * packets (and again in 1-RTT if the server rejects them, §4.6.2);
	 * alpn is NULL (the one offered). Server: the client's 0-RTT was
	 * accepted for alpn: streams may open and be answered (0.5-RTT)
	 * before on_established. */
	void (*on_early)(struct dpq_conn *c, const char *alpn);
};

/* What became of 0-RTT on a connection. */
enum dpq_conn_early {
	DPQ_EARLY_NONE = 0,	/* not attempted */
	DPQ_EARLY_SENT,		/* client: 0-RTT sent, outcome not known */
	DPQ_EARLY_ACCEPTED,	/* the server took the 0-RTT data */
	DPQ_EARLY_REJECTED,	/* it did not: resent in 1-RTT (client) */
};

/* Default handshake deadline (struct dpq_conn_conf). */
#define DPQ_CONN_HANDSHAKE_TIMEOUT_MS	10000

/* Limits we announce (our transport parameters) and local policy. */
struct dpq_conn_conf {
	enum dpq_role role;
	uint32_t version;		/* 0: DPQ_VERSION_1 */
	uint64_t idle_timeout_ms;	/* max_idle_timeout; 0: 30000 */
	/* A handshake not complete this long after creation ends the
	 * connection silently (0: DPQ_CONN_HANDSHAKE_TIMEOUT_MS for a
	 * server, the idle timeout for a client; at most the idle
	 * timeout): a half-open connection holds a server's slot and TLS
	 * state for seconds, not for the idle timeout. */
	uint64_t handshake_timeout_ms;
	uint64_t max_data;		/* initial_max_data; 0: 1 MiB */
	uint64_t max_data_max;		/* auto-tuning cap; 0: 64 MiB */
	uint64_t max_stream_data;	/* per stream; 0: 256 KiB */
	uint64_t max_stream_data_max;	/* auto-tuning cap; 0: 16 MiB */
	uint64_t max_streams_bidi;	/* 0: 100 */
	uint64_t max_streams_uni;	/* 0: 100 */
	uint64_t send_buffer;		/* per stream; 0: 4 MiB */
	uint16_t max_udp_payload;	/* we send and accept; 0: 1452 */
	uint64_t max_ack_delay_ms;	/* 0: 25 */
	const char *cc_name;		/* NULL: "newreno" (dpq_cc_find) */
	/* Send at the controller's pacing rate (RFC 9002 §7.7); true
	 * turns pacing off for this connection (for comparisons). */
	bool no_pacing;
	/* HyStart++ exactly as RFC 9406 even when paced: no paced delay
	 * signal and no capacity probe (dataplane/engine/hystart.h; for
	 * comparisons). */
	bool hystart_rfc;
	/* Mark packets ECT(0) and validate ECN (RFC 9000 §13.4); true:
	 * never mark (peers' counts are still sent). */
	bool no_ecn;
	uint64_t initial_rtt_us;	/* 0: 333 ms (RFC 9002 §6.2.2) */
	/* Source connection ID length we use (server: the shard's router
	 * reads it back, so all connections of a shard share it). */
	uint8_t scid_len;		/* 0: 8 */
	/* Start a 1-RTT key update (RFC 9001 §6) every this many packets
	 * sent; 0: only before the AEAD's confidentiality limit. */
	uint64_t key_update_pkts;
	/* Least time between two updates we start, besides the three PTOs
	 * of RFC 9001 §6.5; 0: 1 s. A peer derives its next keys a PTO
	 * after it saw the last update confirmed, and its PTO can be far
	 * longer than ours (a deep receive queue inflates its RTT); before
	 * that it drops every packet of the new phase. */
	uint64_t key_update_gap_us;
	/* RFC 9001 §6.6 limits, for tests; 0: those of the AEAD. */
	uint64_t aead_conf_limit;	/* packets sealed with one key */
	uint64_t aead_integ_limit;	/* packets failing to open */
	/* XOR-FEC extension (docs/fec.md). fec_max_group: the largest
	 * group we accept (1..64), announced in the xor_fec transport
	 * parameter; 0: the extension is off (no parameter, no frames
	 * either way). fec: the groups we send once both sides have the
	 * extension (mode DPQ_FEC_OFF: receive only). fec_loss_prior_ppm:
	 * the adaptive loss meter's starting point (the shard's recent
	 * loss), so a short transfer on a lossy path is protected early. */
	uint8_t fec_max_group;
	struct dpq_fec_policy fec;
	uint32_t fec_loss_prior_ppm;
	/* Whether a packet the peer reports rebuilt (RECOVERED) is a
	 * congestion event (docs/fec.md §8, cc.h): DPQ_CC_FEC_GUARDED (0,
	 * only with signs of congestion), _LOSS (always, as RFC 9002 §7
	 * treats a loss), _IGNORE (never: an experiment, unsafe). The loss
	 * meter counts them in every case. */
	enum dpq_cc_fec_reaction fec_cc;
	/* Speculative retransmission (docs/fec.md §11): DPQ_SPEC_* kinds of
	 * datagrams sent twice, the copy spec_spacing_us later (0: a
	 * quarter of the smoothed RTT within 2..20 ms; 5 ms before any RTT
	 * sample). */
	uint8_t spec_retx;
	uint32_t spec_spacing_us;
	/* Server: 0-RTT payload bytes a connection processes; later 0-RTT
	 * packets are dropped (the client sends their data again in 1-RTT
	 * once they count as lost). 0: 1 MiB. */
	uint64_t max_early_data;
};

/* Datagrams speculative retransmission sends twice. */
#define DPQ_SPEC_HANDSHAKE	0x01	/* Initial/Handshake CRYPTO data */
#define DPQ_SPEC_TAIL		0x02	/* the last one of a transfer */
#define DPQ_SPEC_REPAIR		0x04	/* one with an XOR-FEC REPAIR */

/* Parse "off", or a comma list of handshake, tail, repair, all. Returns
 * 0 and *flags, or -EINVAL. */
int dpq_conn_spec_parse(const char *s, uint8_t *flags);

/* Largest address-validation token (Retry or NEW_TOKEN) a connection
 * sends or keeps. */
#define DPQ_CONN_TOKEN_MAX	256

/* in with every 0 replaced by its default (what a connection announces). */
void dpq_conn_conf_fill(struct dpq_conn_conf *out,
		const struct dpq_conn_conf *in);

/* Everything a connection is created with. */
struct dpq_conn_init {
	const struct dpq_conn_conf *conf;
	const struct dpq_mem *mem;	/* NULL: libc */
	/* Stream and CRYPTO data (NULL: mem). May refuse (a spent memory
	 * budget, engine/membudget.h): received data is then dropped
	 * unacknowledged, and sent again by the peer. */
	const struct dpq_mem *buf_mem;
	/* The shard's budget behind buf_mem (NULL: none): receive windows
	 * stop growing once half of it is in use. */
	const struct dpq_membudget *budget;
	struct dpq_crypto *crypto;	/* the shard's context */
	const struct dpq_hs_ops *hs_ops;
	void *hs;
	const struct dpq_app_ops *app;
	void *app_ctx;
	/* Our first source CID (server: encodes the shard). */
	struct dpq_cid scid;
	/* Client: the random DCID of its first Initial. Server: the DCID
	 * of the client's first Initial (odcid) and the client's SCID. */
	struct dpq_cid dcid;
	struct dpq_cid peer_scid;	/* server only */
	/* Server: the Retry that preceded this connection (RFC 9000 §7.3):
	 * odcid = the client's first DCID, and dcid above is the SCID our
	 * Retry carried. */
	bool after_retry;
	struct dpq_cid odcid;
	/* Stateless reset token for scid (server). */
	uint8_t reset_token[DPQ_RESET_TOKEN_LEN];
	/* The first path: client, its socket's address (local.family 0:
	 * unknown) and the server's; server, the addresses of the client's
	 * first Initial. */
	struct dpq_tuple tuple;
	/* Client: a NEW_TOKEN token from an earlier connection to this
	 * server, sent in its Initial packets (RFC 9000 §8.1.3); NULL: none.
	 * Copied. */
	const uint8_t *token;
	uint16_t token_len;
	/* Client: the server's transport parameters remembered from an
	 * earlier connection (dpq_conn_remembered_tparams() then), applied
	 * to 0-RTT (RFC 9000 §7.4.1); NULL: no 0-RTT. Copied. */
	const uint8_t *remembered_tp;
	uint16_t remembered_tp_len;
	uint64_t now;
	/* The owner's wake-up hook (see the wake-up contract above): the
	 * connection has work to do; poll and build it soon. May be called
	 * from inside any call into the connection, any number of times.
	 * NULL: the owner polls the connection by itself. */
	void (*wake)(void *arg, struct dpq_conn *c);
	void *wake_arg;
	/* Where more CIDs of ours come from (NULL: only scid). */
	const struct dpq_cid_ops *cid_ops;
	void *cid_arg;
};

/* Connection IDs of ours beyond the first (RFC 9000 §5.1): the owner
 * makes them (a server's say which server and shard own the connection,
 * QUIC-LB) and routes packets carrying them to the connection. The
 * connection issues them in NEW_CONNECTION_ID frames once the handshake
 * is confirmed, up to the peer's active_connection_id_limit (at most
 * DPQ_CONN_LOCAL_CIDS at a time), and replaces each the peer retires. */
struct dpq_cid_ops {
	/* A new CID for c with its stateless reset token; from now on the
	 * owner routes it to c. Returns 0, or -errno (none made: e.g.
	 * -ENOTSUP, a server without a routable CID configuration). */
	int (*issue)(void *arg, struct dpq_conn *c, struct dpq_cid *cid,
			uint8_t token[DPQ_RESET_TOKEN_LEN]);
	/* The peer retired cid: stop routing it. (When the connection
	 * ends the owner drops all its CIDs by itself.) */
	void (*retire)(void *arg, struct dpq_conn *c,
			const struct dpq_cid *cid);
};

/* Most CIDs of ours active at once (sequence 0 included). */
#define DPQ_CONN_LOCAL_CIDS	4

/* Create a connection. A client is ready to send its first Initial once
 * the handshake service delivered the ClientHello (dpq_conn_hs_send). */
int dpq_conn_create(const struct dpq_conn_init *init, struct dpq_conn **out);
void dpq_conn_destroy(struct dpq_conn *c);

/* Our encoded transport parameters, for the handshake service. */
ssize_t dpq_conn_local_tparams(const struct dpq_conn *c, uint8_t *buf,
		size_t len);

/* ---- from the handshake service ----------------------------------------- */

/* Handshake bytes to send in CRYPTO frames at epoch. */
int dpq_conn_hs_send(struct dpq_conn *c, enum dpq_epoch epoch,
		const uint8_t *data, size_t len);
/* A traffic secret: derive and install packet protection keys. */
int dpq_conn_hs_secret(struct dpq_conn *c, enum dpq_epoch epoch, bool write,
		uint16_t cipher_suite, const uint8_t *secret, size_t len);
/* The peer's transport parameters. Returns 0, or the transport error
 * (TRANSPORT_PARAMETER_ERROR, PROTOCOL_VIOLATION for CID mismatches) that
 * the service must fail the handshake with. */
uint64_t dpq_conn_hs_peer_tparams(struct dpq_conn *c, const uint8_t *data,
		size_t len);
/* Server: the client's 0-RTT was accepted for this ALPN (after the 0-RTT
 * read secret): 0-RTT packets are processed from now on. */
void dpq_conn_hs_early(struct dpq_conn *c, const char *alpn);
/* Just before dpq_conn_hs_complete(): whether the handshake resumed a
 * session and whether the 0-RTT data was accepted (RFC 9001 §4.6.2). */
void dpq_conn_hs_resumption(struct dpq_conn *c, bool resumed,
		bool early_accepted);
/* The handshake completed with this ALPN. */
void dpq_conn_hs_complete(struct dpq_conn *c, const char *alpn);
/* The handshake failed: close with this QUIC error code. */
void dpq_conn_hs_failed(struct dpq_conn *c, uint64_t error_code);

/* ---- datagrams ------------------------------------------------------------- */

/* Process one received datagram (decrypted in place) that arrived as ri
 * says (NULL: on the active path, for tests). now in us. Returns the
 * number of QUIC packets accepted (0: none; held ones not counted). */
int dpq_conn_recv(struct dpq_conn *c, uint8_t *dgram, size_t len,
		const struct dpq_rx_info *ri, uint64_t now);

/* Steps of dpq_conn_recv for a shard that batches crypto over a burst.
 * rx_prepare parses the packet at pkt (len bytes left in the datagram)
 * and fills hdr and op; returns 0 (open it), DPQ_CONN_RX_UNPROTECTED or
 * DPQ_CONN_RX_HELD (give the datagram to dpq_conn_recv), or another
 * negative error: drop (the rest of the datagram too if hdr->pkt_len is
 * unknown). */
/* Version Negotiation or Retry: no packet protection to remove. */
#define DPQ_CONN_RX_UNPROTECTED	(-EAGAIN)
/* Keys not here yet, or a server's handshake is not complete (RFC 9001
 * §5.7): dpq_conn_recv holds the packet and processes it when they are.
 * Not -EWOULDBLOCK: that is -EAGAIN on Linux, and the two outcomes were
 * once confused so that every held packet was dropped. */
#define DPQ_CONN_RX_HELD	(-EINPROGRESS)
int dpq_conn_rx_prepare(struct dpq_conn *c, uint8_t *pkt, size_t len,
		struct dpq_pkt_hdr *hdr, struct dpq_open_op *op);
int dpq_conn_rx_select_key(struct dpq_conn *c, const struct dpq_pkt_hdr *hdr,
		struct dpq_open_op *op);
/* The opened packet is the whole datagram (a short-header packet ends
 * its datagram, RFC 9000 §12.2), dgram_len bytes received as ri says. */
int dpq_conn_rx_process(struct dpq_conn *c, const struct dpq_pkt_hdr *hdr,
		const struct dpq_open_op *op, size_t dgram_len,
		const struct dpq_rx_info *ri, uint64_t now);

/* Around a batch of dpq_conn_rx_process() calls whose packet buffers
 * stay valid until after dpq_conn_rx_end(): the XOR-FEC receiver then
 * XORs the batch's plaintexts into their groups in one pass per group
 * (docs/fec.md) instead of one packet at a time. Calls may repeat (one
 * per packet is fine); without them every packet is accumulated before
 * dpq_conn_rx_process() returns. */
void dpq_conn_rx_begin(struct dpq_conn *c);
void dpq_conn_rx_end(struct dpq_conn *c);

/* Most seal ops one datagram needs (one per coalesced packet: Initial,
 * 0-RTT, Handshake, 1-RTT). */
#define DPQ_CONN_MAX_SEAL_OPS 4

/* Build up to n datagrams into d[i].buf (d[i].cap bytes each, tags
 * included); d[i].len, .nops, .ecn and .tuple are filled in, and the seal
 * ops of all of them go to ops[] in order (room for n *
 * DPQ_CONN_MAX_SEAL_OPS). Returns the number of datagrams built (0:
 * nothing to send now; fewer than n: nothing more now), or a negative
 * errno. The caller seals ops[] (one burst), sends d[i] from
 * d[i].tuple.local to d[i].tuple.peer, then calls dpq_conn_tx_done(). */
int dpq_conn_build_burst(struct dpq_conn *c, struct dpq_tx_dgram *d,
		unsigned int n, struct dpq_seal_op *ops, uint64_t now);
/* After the caller sealed what dpq_conn_build_burst() produced: work
 * that frees keys waits until then (the client's Initial keys, RFC 9001
 * §4.9.1). */
void dpq_conn_tx_done(struct dpq_conn *c, uint64_t now);
/* Build and seal one datagram (build_burst of 1 + seal + tx_done); *to
 * (if not NULL) gets its tuple. Returns its length, 0 or -errno. */
ssize_t dpq_conn_send(struct dpq_conn *c, uint8_t *buf, size_t cap,
		struct dpq_tuple *to, uint64_t now);

/* Client: move the connection to a new local address (RFC 9000 §9.2),
 * e.g. after rebinding its socket: later packets go out on tuple t with
 * an unused peer CID, and the new path is validated. Returns 0, -EAGAIN
 * (handshake not confirmed, or no unused peer CID yet), -EPERM (the
 * server set disable_active_migration) or -EINVAL. */
int dpq_conn_migrate(struct dpq_conn *c, const struct dpq_tuple *t,
		uint64_t now);
/* Could the client migrate now? 0, or what dpq_conn_migrate() would
 * return (check before giving up the old socket). */
int dpq_conn_migrate_check(const struct dpq_conn *c);
/* The path packets are sent on now. */
const struct dpq_tuple *dpq_conn_active_tuple(const struct dpq_conn *c);
/* Deferred work, between bursts: packets that waited for keys that have
 * arrived since, and timers that are due. A shard calls it once per
 * connection per loop, before building. */
void dpq_conn_poll(struct dpq_conn *c, uint64_t now);
/* A 1-RTT packet of this connection failed to open in a batch: check
 * whether it is a stateless reset (RFC 9000 §10.3.1). */
void dpq_conn_rx_failed(struct dpq_conn *c, const uint8_t *pkt, size_t len,
		uint64_t now);

/* Earliest time dpq_conn_on_timeout() must run (UINT64_MAX: none); it
 * covers every time-driven need (wake-up contract above). */
uint64_t dpq_conn_next_timeout(const struct dpq_conn *c);
/* Would dpq_conn_build_burst() produce a datagram at now? False while nothing
 * is pending or the congestion window, pacing or the amplification limit
 * holds it back (a received datagram or next_timeout lifts that). */
bool dpq_conn_wants_send(const struct dpq_conn *c, uint64_t now);
void dpq_conn_on_timeout(struct dpq_conn *c, uint64_t now);

/* ---- state --------------------------------------------------------------- */

enum dpq_conn_state dpq_conn_state(const struct dpq_conn *c);
bool dpq_conn_is_server(const struct dpq_conn *c);
bool dpq_conn_handshake_confirmed(const struct dpq_conn *c);
/* The peer's address on the active path is validated (RFC 9000 §8.1: a
 * server saw a Handshake packet from it, or a valid token). */
bool dpq_conn_peer_validated(const struct dpq_conn *c);
const char *dpq_conn_alpn(const struct dpq_conn *c);
void *dpq_conn_app_ctx(const struct dpq_conn *c);
void dpq_conn_set_app_ctx(struct dpq_conn *c, void *ctx);
/* The handshake service's per-connection state (set by the service). */
/* The owner's (shard's) per-connection pointer. */
void *dpq_conn_owner(const struct dpq_conn *c);
void dpq_conn_set_owner(struct dpq_conn *c, void *owner);
void *dpq_conn_hs_ctx(const struct dpq_conn *c);
void dpq_conn_set_hs_ctx(struct dpq_conn *c, void *ctx);
const struct dpq_cid *dpq_conn_scid(const struct dpq_conn *c);
const struct dpq_cid *dpq_conn_dcid(const struct dpq_conn *c);

struct dpq_conn_close_info {
	uint64_t error_code;
	uint64_t frame_type;
	bool app;		/* application error (0x1d) */
	bool remote;		/* the peer closed */
	bool idle;		/* idle timeout, no frame */
	bool handshake_timeout;	/* handshake deadline passed, no frame */
	bool stateless_reset;	/* the peer's stateless reset (§10.3) */
	bool version_mismatch;	/* no common version (§6.2) */
	char reason[128];
};
/* Why the connection closes (valid from CLOSING/DRAINING/CLOSED). */
const struct dpq_conn_close_info *dpq_conn_close_info(const struct dpq_conn *c);
/* The owner frees a connection that has not started to close (an
 * evicted half-open connection): its trace, if any, says so and why
 * (CONN_CLOSED, trigger ABANDONED); its clock moves to now. No-op for
 * a connection that has started to close (its record is out). */
void dpq_conn_trace_abandon(struct dpq_conn *c, const char *why,
		uint64_t now);

struct dpq_conn_stats {
	uint64_t pkts_sent, pkts_recv, pkts_dropped;
	uint64_t bytes_sent, bytes_recv;	/* UDP payload */
	uint64_t pkts_lost, pkts_acked;
	uint64_t stream_bytes_sent, stream_bytes_recv;
	uint64_t srtt_us, min_rtt_us, cwnd, bytes_in_flight;
	uint64_t handshake_us;		/* created → handshake complete */
	/* Server: bytes received from / sent to the peer's address while
	 * it was not validated (RFC 9000 §8.1: tx <= 3 rx). */
	uint64_t unvalidated_rx, unvalidated_tx;
	uint64_t key_updates;		/* 1-RTT key updates we started */
	uint64_t key_updates_peer;	/* ... the peer started */
	uint64_t auth_failures;		/* packets that failed to open */
	uint64_t created_us;		/* now of dpq_conn_create() */
	uint32_t streams;		/* open streams */
	/* XOR-FEC (docs/fec.md): fec_on when both sides have it. */
	bool fec_on;
	uint64_t fec_groups;		/* REPAIR frames we sent for a group */
	uint64_t fec_repair_bytes;	/* their bytes: the overhead */
	uint64_t fec_protected;		/* our packets covered by a group */
	uint64_t fec_recovered;		/* peer packets we rebuilt */
	uint64_t fec_unrecoverable;	/* groups that lost two or more */
	uint64_t fec_peer_recovered;	/* our packets the peer rebuilt */
	/* ... of those outstanding, taken as congestion events / not
	 * (conf.fec_cc) */
	uint64_t fec_cc_congestion, fec_cc_forgiven;
	uint32_t fec_loss_ppm;		/* the sender's loss meter */
	uint64_t spec_sent;		/* speculative copies sent */
	uint64_t spec_dropped;		/* ... not sent (keys gone, full) */
	uint16_t cipher_suite;
	/* Paths (RFC 9000 §8.2, §9). */
	uint64_t migrations;		/* active path changed */
	uint64_t paths_validated;	/* PATH_RESPONSE matched a challenge */
	uint64_t paths_failed;		/* validation abandoned on timeout */
	uint64_t path_reverts;		/* back to the last validated path */
	uint64_t rx_unknown_path;	/* packets dropped: path not allowed */
	uint64_t recovery_resets;	/* RTT and CC reset for a new path */
	/* Loss recovery and congestion control (RFC 9002). */
	char cc[16];			/* controller: "newreno", "cubic", "bbr" */
	char cc_state[24];		/* its state: "slow_start", "probe_bw_up" */
	uint64_t ssthresh;		/* UINT64_MAX: not set */
	uint64_t pacing_rate;		/* bytes/s; 0: not paced */
	uint64_t pacer_held;		/* sends the pacer deferred */
	uint64_t ptos;			/* probe timeouts */
	uint64_t spurious_losses;	/* acked after declared lost */
	uint64_t cc_undos;		/* congestion responses undone */
	uint64_t persistent_congestions;
	uint64_t congestion_events;
	uint32_t reorder_threshold;	/* packet threshold (adapts) */
	char ecn[12];			/* ECN validation: "testing", "capable",
					 * "failed", ... (RFC 9000 §13.4.2) */
	uint64_t ecn_ce;		/* CE increases the peer reported */
	uint64_t cids_issued;		/* NEW_CONNECTION_ID, our new CIDs */
	uint64_t cids_retired;		/* ours the peer retired */
	bool resumed;			/* TLS resumption (RFC 8446 §2.2) */
	uint8_t early;			/* enum dpq_conn_early */
	uint64_t early_bytes;		/* 0-RTT stream bytes sent (client)
					 * or taken (server) */
	uint64_t early_dropped;		/* server: 0-RTT packets dropped over
					 * max_early_data */
};
void dpq_conn_get_stats(const struct dpq_conn *c, struct dpq_conn_stats *st);

/* Server: send tok in a NEW_TOKEN frame (RFC 9000 §8.1.3, §19.7) once
 * the handshake is complete, again if it is lost; a later call replaces
 * a token not yet sent. Returns 0, -EINVAL (client, len 0 or above
 * DPQ_CONN_TOKEN_MAX), -ENOMEM or -EPIPE (closing). */
int dpq_conn_send_new_token(struct dpq_conn *c, const uint8_t *tok,
		size_t len);
/* Client: the last NEW_TOKEN token the server sent (for a later
 * connection to it); returns its length, 0 when none came. */
size_t dpq_conn_new_token(const struct dpq_conn *c, const uint8_t **tok);
/* Client: the server's transport parameters a later connection must
 * remember for 0-RTT (RFC 9000 §7.4.1: those it may use), encoded as a
 * server would. Returns the length, -EAGAIN before the server's
 * parameters arrived, -ENOSPC. */
ssize_t dpq_conn_remembered_tparams(const struct dpq_conn *c, uint8_t *buf,
		size_t len);

/* Start a 1-RTT key update (RFC 9001 §6.1) as soon as it is allowed: the
 * handshake is confirmed and the peer acknowledged the current keys.
 * Returns 0, -EAGAIN before the handshake is confirmed, -EPIPE closing. */
int dpq_conn_key_update(struct dpq_conn *c);

/* The XOR-FEC policy for what this connection sends from now on
 * (docs/fec.md §10); takes effect at the next group. Returns 0, or
 * -EINVAL for a bad policy. */
int dpq_conn_set_fec_policy(struct dpq_conn *c,
		const struct dpq_fec_policy *p);

/* The owner expects the connection to stay idle: give back the memory
 * it can rebuild (the expanded 1-RTT keys, kept in saved form, their next
 * generation, empty sent-packet blocks) and pack the rest of its state
 * that an idle connection does not read (docs/shard.md). The first call
 * that may change it (a datagram, a due timer, the application, the
 * handshake service) unparks it, byte for byte; calls that only read
 * (state, next timeout, statistics, the active tuple) do not. Returns 0,
 * or -EBUSY when something is pending or it is not established (nothing
 * changed), -ENOMEM. */
int dpq_conn_park(struct dpq_conn *c);
bool dpq_conn_parked(const struct dpq_conn *c);

/* Close with a transport (app=false) or application error: sends
 * CONNECTION_CLOSE, then closing for 3 PTO (RFC 9000 §10.2). */
void dpq_conn_close(struct dpq_conn *c, bool app, uint64_t error_code,
		const char *reason);

/* ---- streams (application API) --------------------------------------- */

/* Open a locally initiated stream. Returns 0 and *id, -EAGAIN when the
 * peer's MAX_STREAMS is reached (STREAMS_BLOCKED is sent), -EPIPE when
 * closed. */
int dpq_conn_stream_open(struct dpq_conn *c, bool uni, uint64_t *id);
/* Queue bytes to send; returns bytes taken (may be fewer: buffer full,
 * on_stream_writable follows) or a negative errno. fin ends the stream
 * when all of len is taken. */
ssize_t dpq_conn_stream_write(struct dpq_conn *c, uint64_t id,
		const void *data, size_t len, bool fin);
/* Read up to len contiguous bytes; *fin is set once everything up to the
 * final size was read, by the read that returns the last byte (even when
 * it fills buf) and by any read after it. Returns bytes read (0: nothing
 * yet) or -errno. The read that reaches the end frees a stream whose
 * sending side is done too (on_stream_closed runs in it): a read after
 * that returns -ENOENT, so stop at *fin. */
ssize_t dpq_conn_stream_read(struct dpq_conn *c, uint64_t id, void *buf,
		size_t len, bool *fin);
/* RESET_STREAM (abandon sending) / STOP_SENDING (abandon reading). */
int dpq_conn_stream_reset(struct dpq_conn *c, uint64_t id,
		uint64_t app_error);
int dpq_conn_stream_stop(struct dpq_conn *c, uint64_t id,
		uint64_t app_error);

#endif /* DPQ_QUIC_CONN_H */
