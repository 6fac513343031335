/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Internal layout of struct dpq_conn, shared by conn.c (life cycle, state,
 * keys, handshake, timers), conn_recv.c (frames in), conn_send.c (packet
 * builder) and conn_stream.c (stream table and application API).
 */
#ifndef DPQ_QUIC_CONN_INT_H
#define DPQ_QUIC_CONN_INT_H

#include "dataplane/crypto/pp_key.h"
#include "dataplane/engine/ackr.h"
#include "dataplane/engine/cc.h"
#include "dataplane/engine/flow.h"
#include "dataplane/engine/frame.h"
#include "dataplane/engine/loss.h"
#include "dataplane/engine/pacer.h"
#include "dataplane/engine/recvbuf.h"
#include "dataplane/engine/sendbuf.h"
#include "dataplane/engine/stream.h"
#include "dataplane/quic/conn.h"
#include "dataplane/quic/trace.h"

/* Peer connection IDs we keep (RFC 9000 §5.1.1); our
 * active_connection_id_limit. */
#define DPQ_CONN_PEER_CIDS	4
/* Unprocessed CRYPTO bytes a level may buffer (RFC 9000 §7.5). */
#define DPQ_CONN_CRYPTO_SEND_MAX (256 * 1024)
/* RFC 9000 §8.1: a server sends at most 3x what it received before the
 * client's address is validated. */
#define DPQ_CONN_AMP_FACTOR	3
/* RFC 9002 §6.2.3: early CRYPTO retransmissions per connection. */
#define DPQ_CONN_EARLY_RESENDS	4
/* RFC 9002 §6.2.4: at most two probe packets per space at a time. */
#define DPQ_CONN_MAX_PROBES	2
/* Smaller room than this is not worth a datagram. */
#define DPQ_CONN_MIN_DGRAM	64
/* RFC 9000 §10.2: closing and draining last three PTOs. */
#define DPQ_CONN_CLOSE_PTOS	3
/* Undecryptable packets kept until their keys arrive (conn_recv.c). */
#define DPQ_CONN_RX_BUFFERED	4

struct dpq_rx_buffered {
	uint16_t len;
	uint16_t dgram_len;
	struct dpq_rx_info ri;
	uint8_t data[1500];
};

/* Paths a connection keeps (RFC 9000 §9): the active one, the last
 * validated one to return to (§9.3.3) and one or two being probed. */
#define DPQ_CONN_PATHS		4
#define DPQ_PATH_NONE		0xff
/* PATH_CHALLENGE data values of a path we still accept a response to. */
#define DPQ_PATH_CHALLENGES	3

/* One network path (RFC 9000 §8.2, §9); conn_path.c is its writer. */
struct dpq_path {
	bool in_use;
	/* The peer proved its address here (§8.1 handshake, §8.2 path
	 * validation), or we know it (a client's server): no 3x limit. */
	bool validated;
	struct dpq_tuple tuple;
	/* §8, §9.3.1: before validation at most 3x what arrived here. */
	uint64_t amp_recv;
	uint64_t amp_sent;
	uint64_t last_rx;		/* newest datagram received here */
	/* Our path validation (§8.2.1, §8.2.4). */
	bool challenging;		/* in progress */
	bool challenge_due;		/* a PATH_CHALLENGE to send now */
	uint8_t nchallenges;		/* sent so far (backoff) */
	uint8_t challenge[DPQ_PATH_CHALLENGES][DPQ_PATH_DATA_LEN];
	uint64_t challenge_retry;	/* resend after */
	uint64_t validation_deadline;	/* abandon at */
	/* Reset RTT and congestion control once validated (§9.4: not for
	 * a change of port only). */
	bool reset_on_validate;
	/* A PATH_RESPONSE owed on this path (§8.2.2). */
	bool response_due;
	uint8_t response[DPQ_PATH_DATA_LEN];
	/* The peer's CID we send with here (§9.5): len 0 with a non-empty
	 * connection CID means none is available yet. */
	struct dpq_cid dcid;
	/* The CID of ours the peer used here last: a change tells an
	 * intended migration from a NAT rebinding (§9.5). */
	struct dpq_cid rx_dcid;
};

/* A stream inside the connection. */
struct dpq_qstream {
	struct dpq_stream s;
	struct dpq_qstream *hnext;		/* hash chain */
	struct dpq_qstream *qnext, *qprev;	/* send queue */
	bool in_sendq;
};

/* Ack-only packets (neither ack-eliciting nor in flight) stay out of the
 * sent-packet map: they carry nothing to retransmit, and a peer that
 * never acknowledges would otherwise pin one map entry per packet it
 * sends us. The last few are remembered so that an acknowledgment of one
 * still lets us stop reporting what its ACK frame covered (RFC 9000
 * §13.2.4). */
#define DPQ_CONN_ACK_ONLY_TRACK	8

struct dpq_ack_only {
	uint64_t pn;
	uint64_t largest_plus1;		/* its ACK's largest + 1; 0: empty */
};

/* One packet number space (RFC 9000 §12.3). */
struct dpq_pn_space_state {
	uint64_t next_pn;
	/* APP: the connection's ackr_app; Initial and Handshake: in the
	 * handshake-only state (NULL once it is freed, the space discarded). */
	struct dpq_ackr *ackr;
	uint32_t probes;		/* PTO probes still to send */
	bool discarded;			/* keys dropped (RFC 9001 §4.9) */
	struct dpq_ack_only ack_only[DPQ_CONN_ACK_ONLY_TRACK];
	unsigned int ack_only_next;	/* ring position */
};

/* A CRYPTO stream of one encryption level. */
struct dpq_crypto_stream {
	struct dpq_recvbuf rb;
	struct dpq_sendbuf sb;
};

struct dpq_peer_cid {
	struct dpq_cid cid;
	uint64_t seq;
	uint8_t reset_token[DPQ_RESET_TOKEN_LEN];
	bool used;		/* slot holds an active (unretired) CID */
	bool has_token;
	/* We sent with this CID: only then may its token end the
	 * connection (RFC 9000 §10.3.1). */
	bool sent_on;
};

/* 1-RTT key update (RFC 9001 §6), conn_keys.c. rx[1RTT] and tx[1RTT] of
 * struct dpq_conn are the current keys; generation n has key phase n & 1. */
struct dpq_conn_keys {
	struct dpq_pp_key *rx_prev;	/* kept ~3 PTO for reordered packets */
	struct dpq_pp_key *rx_next;	/* derived ahead (§6.3, §9.5) */
	struct dpq_pp_key *tx_next;
	struct dpq_pp_key *tx_old;	/* until the burst using it is sealed */
	uint64_t rx_gen, tx_gen;	/* tx_gen is rx_gen or rx_gen + 1 */
	uint64_t rx_first_pn;		/* lowest pn opened with rx keys */
	uint64_t rx_largest_pn;		/* largest pn opened with rx keys */
	uint64_t rx_prev_deadline;	/* rx_prev goes then */
	uint64_t tx_first_pn;		/* first pn sealed with tx keys */
	uint64_t tx_pkts;		/* packets sealed with tx keys */
	uint64_t confirmed_at;		/* a tx-key packet was acked then;
					 * UINT64_MAX: not yet (§6.1) */
	uint64_t auth_failures;		/* whole connection (§6.6) */
	uint64_t conf_limit, integ_limit;	/* of the AEAD (§6.6) */
	bool rx_unacked;		/* rx moved on; no ACK sent since */
	bool requested;			/* dpq_conn_key_update() */
};

/* Received stream data a connection may buffer beyond its receive window
 * (chunk rounding of partly filled 4 KiB chunks, hole tracking): past
 * window + this, packets are dropped unacknowledged. */
#define DPQ_CONN_RX_MEM_SLACK	(256u * 1024u)

/* What only the handshake needs (memory per connection: an established
 * connection does not carry it). Allocated with the connection, freed by
 * dpq_conn_poll() once the handshake is confirmed and the Initial and
 * Handshake spaces are discarded (RFC 9001 §4.9). */
struct dpq_conn_hs_state {
	struct dpq_ackr ackr[2];		/* Initial, Handshake */
	struct dpq_ack_range ackr_r[2][DPQ_ACKR_MAX_RANGES];
	struct dpq_crypto_stream cs[3];		/* Initial, 0-RTT, Handshake */
	struct dpq_tparams local_tp;		/* ours, for the TLS service */
	/* Client: token sent in every Initial: a NEW_TOKEN token from an
	 * earlier connection (dpq_conn_init.token), replaced by a Retry's. */
	uint8_t token[DPQ_CONN_TOKEN_MAX];
	uint16_t token_len;
};

/* A CID of ours (RFC 9000 §5.1.1). */
struct dpq_local_cid {
	struct dpq_cid cid;
	uint64_t seq;
	uint8_t reset_token[DPQ_RESET_TOKEN_LEN];
	bool used;		/* issued and not retired */
	bool announce;		/* a NEW_CONNECTION_ID to (re)send */
};

/* The fallback path's RTT and congestion state (conn_path.c). */
struct dpq_conn_saved_path {
	struct dpq_rtt rtt;
	struct dpq_cc cc;
};

/*
 * The biggest part of a connection's state (about 3.3 KB), and the part
 * an idle connection does not read: while it is parked (conn_park.c) it
 * is freed and kept packed (its nonzero 64-bit words, about 400 bytes:
 * most of it is zeros and small counters) and unpacked byte for byte at
 * the first call that needs it. No pointer may point into it from
 * outside across a park (c->rx_path is per packet) nor from inside it
 * to itself: it moves.
 */
struct dpq_conn_body {
	struct dpq_pn_space_state pns[DPQ_PN_SPACE_COUNT];
	struct dpq_loss loss;
	struct dpq_cc cc;
	struct dpq_tparams peer_tp;
	struct dpq_path paths[DPQ_CONN_PATHS];
	struct dpq_conn_stats stats;
};

/* ACK ranges of the application space a parked connection keeps. */
#define DPQ_CONN_PARKED_RANGES	2

struct dpq_conn {
	enum dpq_conn_state state;
	enum dpq_role role;
	uint32_t version;
	struct dpq_conn_conf conf;	/* defaults filled in */
	struct dpq_mem mem;
	struct dpq_mem buf_mem;		/* stream and CRYPTO data */
	struct dpq_mem rx_mem;		/* received stream data: charges
					 * rx_mem_used, then buf_mem */
	uint64_t rx_mem_used;
	uint64_t rx_mem_refused;	/* allocations over the bound */
	const struct dpq_membudget *budget;
	struct dpq_crypto *crypto;
	const struct dpq_hs_ops *hs_ops;
	void *hs;
	void *hs_ctx;
	const struct dpq_app_ops *app;
	void *app_ctx;

	/* Connection IDs (RFC 9000 §5.1, §7.2, §7.3). */
	struct dpq_cid scid;		/* ours */
	struct dpq_cid dcid;		/* the peer's, in use */
	struct dpq_cid odcid;		/* client's first DCID */
	struct dpq_cid retry_scid;	/* client: SCID of the Retry taken */
	struct dpq_cid peer_initial_scid; /* SCID of the peer's first packet */
	bool retry_done;		/* client got a Retry / server sent one */
	bool peer_scid_known;		/* client: switched DCID to it */
	uint8_t reset_token[DPQ_RESET_TOKEN_LEN];	/* ours (server) */
	struct dpq_peer_cid peer_cids[DPQ_CONN_PEER_CIDS];
	uint64_t peer_retire_prior_to;
	/* RETIRE_CONNECTION_ID frames to send: §5.1.2 asks room for at
	 * least twice our active_connection_id_limit. */
	uint64_t retire_pending[2 * DPQ_CONN_PEER_CIDS];
	unsigned int n_retire_pending;
	/* Our CIDs (conn_cid.c): [0] is scid, sequence 0. */
	struct dpq_local_cid local_cids[DPQ_CONN_LOCAL_CIDS];
	uint64_t next_local_seq;
	const struct dpq_cid_ops *cid_ops;
	void *cid_arg;
	/* The DCID of the packet being processed (RETIRE_CONNECTION_ID
	 * must not name it, RFC 9000 §19.16). */
	struct dpq_cid rx_pkt_dcid;

	/* Keys, per epoch; 1-RTT also has the next generation. */
	struct dpq_pp_key *rx[DPQ_EPOCH_COUNT];
	struct dpq_pp_key *tx[DPQ_EPOCH_COUNT];
	uint8_t key_phase;		/* 1-RTT key phase bit we send */
	struct dpq_conn_keys ku;

	/* Packet number spaces, recovery, congestion control, transport
	 * parameters, paths and counters (struct dpq_conn_body): NULL
	 * while parked, when they are in the parked form (conn_park.c). */
	struct dpq_conn_body *b;
	struct dpq_pacer pacer;
	bool pace_hold;			/* this build: the pacer says wait */
	uint8_t dgram_ecn;		/* this build: the datagram's codepoint */
	uint8_t rx_last_ecn;		/* codepoint of the last 1-RTT packet */
	bool dgram_in_flight;		/* this datagram counts in flight */
	uint64_t largest_rx_pn[DPQ_PN_SPACE_COUNT];

	/* CRYPTO streams by epoch: 1-RTT's is cs_1rtt, the others live in
	 * the handshake-only state (NULL once it is freed). */
	struct dpq_crypto_stream *cs[DPQ_EPOCH_COUNT];
	struct dpq_crypto_stream cs_1rtt;
	struct dpq_ackr ackr_app;
	/* Its ranges (DPQ_ACKR_MAX_RANGES); NULL while parked, when the
	 * few left are in ackr_app_idle (conn_park.c). */
	struct dpq_ack_range *ackr_app_r;
	struct dpq_ack_range ackr_app_idle[DPQ_CONN_PARKED_RANGES];
	/* Handshake-only state; NULL once the handshake is confirmed and
	 * the Initial and Handshake spaces are gone (dpq_conn_poll). */
	struct dpq_conn_hs_state *hss;
	/* Parked (dpq_conn_park): the 1-RTT keys in saved form, rx and tx
	 * [1RTT] NULL until dpq_conn_unpark(). */
	struct dpq_conn_parked *parked;
	/* TLS message framing of the 1-RTT CRYPTO stream, followed to find
	 * a KeyUpdate before it reaches TLS (RFC 9001 §6). */
	struct {
		uint32_t body_left;	/* bytes of the current message */
		uint8_t hdr[4];		/* type, 24-bit length */
		uint8_t hdr_len;
	} tls_1rtt;

	/* Transport parameters (ours: hss->local_tp; the peer's: b). */
	bool peer_tp_set;
	uint64_t idle_timeout_us;	/* negotiated (RFC 9000 §10.1) */
	uint16_t max_udp_payload;	/* what we may send */

	/* Flow control and streams. */
	struct dpq_flow_rx rx_fc;
	struct dpq_flow_tx tx_fc;
	struct dpq_streams_rx streams_rx[2];	/* [uni] */
	struct dpq_streams_tx streams_tx[2];
	struct dpq_qstream **stab;	/* hash table of streams */
	uint32_t stab_size;		/* power of two */
	uint32_t nstreams;
	struct dpq_qstream *sendq;	/* round robin of streams to serve */

	/* Handshake progress. */
	bool hs_complete;		/* RFC 9001 §4.1.1 */
	bool hs_confirmed;		/* RFC 9001 §4.1.2 */
	bool handshake_done_pending;	/* server: HANDSHAKE_DONE to (re)send */
	bool handshake_done_acked;	/* server: the client has it */
	bool hs_failed;
	bool discard_initial_pending;	/* client, RFC 9001 §4.9.1 */
	bool confirm_pending;		/* client: 1-RTT packet acked */
	uint8_t early_resends;		/* RFC 9002 §6.2.3, bounded */
	uint8_t hsdone_resends;		/* ... of HANDSHAKE_DONE, bounded */
	uint64_t created;
	uint64_t hsdone_sent_at;	/* server: last HANDSHAKE_DONE sent */
	char alpn[64];
	uint16_t cipher_suite;

	/* Timers and closing. */
	uint64_t idle_deadline;
	uint64_t hs_deadline;		/* until the handshake completes */
	uint64_t close_deadline;	/* end of closing/draining */
	bool close_pending;		/* CONNECTION_CLOSE to send */
	bool close_sent_once;
	/* Closed from outside a call that brings the time (dpq_conn_close):
	 * close_deadline counts from the next now, not from c->now, which
	 * is as old as the connection's last activity. */
	bool close_unanchored;
	uint64_t close_rx_count;	/* packets received while closing */
	struct dpq_conn_close_info close;
	bool ping_pending;		/* an ack-eliciting packet is wanted */

	/* Paths (conn_path.c, in b). c->dcid is the active path's. */
	uint8_t active;			/* index of the path we send on */
	uint8_t fallback;		/* last validated path (§9.3.3) */
	/* The fallback's RTT and congestion state, restored if we return
	 * to it (§9.3.2, §9.4). */
	struct dpq_conn_saved_path *saved;	/* NULL: none (allocated
						 * at a migration only) */
	/* The path of the packet being processed (frames answer on it). */
	struct dpq_path *rx_path;
	/* NEW_TOKEN (RFC 9000 §8.1.3, §19.7). Server: the token to send,
	 * held until acknowledged; client: the last one received. Both
	 * allocated only when there is one. */
	uint8_t *nt_tx;
	uint8_t *nt_rx;
	uint16_t nt_tx_len, nt_rx_len;
	bool nt_tx_pending;		/* frame to (re)send */
	/* 0-RTT (RFC 9001 §4.6, RFC 9000 §7.4.1). */
	enum dpq_conn_early early;	/* writer: conn.c */
	bool early_tp;			/* client: remembered limits apply */
	bool early_ready;		/* server: accepted, ALPN known */
	bool discard_0rtt_pending;	/* client: 0-RTT key goes at tx_done */
	bool resumed;
	uint64_t early_discard_at;	/* server: 0-RTT read key goes then */
	uint64_t early_rx_bytes;	/* server: 0-RTT payload taken */
	uint64_t early_limit[7];	/* client: remembered §7.4.1 limits */
	uint64_t first_1rtt_pn;		/* APP space: first 1-RTT packet
					 * (0-RTT ones come before it) */
	/* Packets waiting for their keys: DPQ_CONN_RX_BUFFERED slots,
	 * allocated by the first one held, freed when none is left. */
	struct dpq_rx_buffered *rx_buffered;
	unsigned int n_rx_buffered;
	/* Inside packet processing: keys installed from there (in-thread
	 * TLS) release held packets when it returns, not re-entrantly. */
	bool in_rx;
	uint64_t now;			/* latest now seen, for app calls */
	void *owner;			/* the shard's slot */
	/* The owner's wake-up hook (conn.h, wake-up contract). */
	void (*wake)(void *arg, struct dpq_conn *c);
	void *wake_arg;

	/* XOR-FEC extension (conn_fec.c, docs/fec.md): our xor_fec value,
	 * the policy and loss meter, and the rest, allocated once both
	 * sides turned out to have the extension (NULL otherwise). */
	uint8_t fec_tp[4];
	uint8_t fec_tp_len;
	struct dpq_fec_policy fec_policy;
	struct dpq_fec_meter fec_meter;
	struct dpq_conn_fec *fec;
	/* Speculative retransmission (conn_spec.c): why the datagram being
	 * built would be worth a copy (DPQ_SPEC_*), and the copies waiting
	 * (allocated on first use). */
	uint8_t spec_why;
	struct dpq_conn_spec *spec;

	/* Trace hook (trace.h); NULL: off. */
	dpq_trace_fn *trace;
	void *trace_ctx;
	uint8_t trace_phase;		/* last reported enum dpq_cc_phase */
	uint8_t trace_loss_trigger;	/* for losses being reported */
};

/* Speculative copies (conn_spec.c). */
#define DPQ_CONN_SPEC_MAX		4
/* Datagrams of one build burst looked at for copies. */
#define DPQ_CONN_SPEC_BURST		64
#define DPQ_CONN_SPEC_MTU		1500
#define DPQ_CONN_SPEC_SPACING_FIRST	5000	/* us, before an RTT sample */
#define DPQ_CONN_SPEC_SPACING_MIN	2000
#define DPQ_CONN_SPEC_SPACING_MAX	20000

struct dpq_spec_copy {
	uint64_t due;
	uint16_t len;			/* the datagram, tags included */
	uint8_t nops;
	uint8_t why;			/* DPQ_SPEC_* */
	struct dpq_seal_op ops[DPQ_CONN_MAX_SEAL_OPS];
	uint16_t off[DPQ_CONN_MAX_SEAL_OPS];	/* of each packet */
	uint8_t epoch[DPQ_CONN_MAX_SEAL_OPS];
	uint8_t data[DPQ_CONN_SPEC_MTU];	/* plaintext, as built */
};

struct dpq_conn_spec {
	unsigned int n;			/* q[0] is due first */
	struct dpq_spec_copy q[DPQ_CONN_SPEC_MAX];
};

void dpq_conn_spec_destroy(struct dpq_conn *c);
/* Forget the copies waiting (their packets are stale: a Retry). */
void dpq_conn_spec_drop(struct dpq_conn *c);
/* A datagram was built (plaintext, before its seal): keep a copy if
 * c->spec_why says it is worth one and the policy wants it. */
void dpq_conn_spec_on_built(struct dpq_conn *c, const uint8_t *buf,
		size_t len, const struct dpq_seal_op *ops, unsigned int nops,
		uint64_t now);
/* When the next copy is due (UINT64_MAX: none). */
uint64_t dpq_conn_spec_deadline(const struct dpq_conn *c);
/* A due copy into buf with its seal ops (at most allow bytes: the
 * amplification limit); returns its length or 0. */
size_t dpq_conn_spec_take(struct dpq_conn *c, uint8_t *buf, size_t cap,
		size_t allow, struct dpq_seal_op *ops, unsigned int *nops,
		uint64_t now);

/* Member payloads and REPAIR data areas of one burst, for the XOR pass. */
#define DPQ_CONN_FEC_SEGS	64

struct dpq_conn_fec {
	uint32_t peer_max;		/* the peer's Max Group Size */
	struct dpq_fec_tx tx;
	struct dpq_fec_rx rx;
	struct dpq_fec_seg segs[DPQ_CONN_FEC_SEGS];
	unsigned int nsegs;
	/* The packet being processed carries this REPAIR (handled after
	 * its frames; such a packet is not accumulated). */
	bool rx_has_repair;
	struct dpq_fec_repair rx_repair;
	uint64_t now;			/* of the packet being processed */
	uint64_t member_sent;		/* when the last member left */
	uint64_t group_start;		/* when the open group's first did */
	/* Loss detection's time slack (dpq_loss_set_time_slack): the
	 * longest group (first member to REPAIR) whose members may still
	 * be outstanding, and when it was set. */
	uint64_t slack, slack_at;
	bool rx_batch;			/* dpq_conn_rx_begin() .. _end() */
};

/* conn_fec.c: the XOR-FEC extension inside the connection. */
void dpq_conn_fec_init(struct dpq_conn *c);
void dpq_conn_fec_destroy(struct dpq_conn *c);
/* The peer's transport parameters arrived: 0 or a transport error. */
uint64_t dpq_conn_fec_peer_tparams(struct dpq_conn *c,
		const struct dpq_tparams *tp);
/* Sender, from the packet builder (1-RTT packets only): a REPAIR must go
 * now, alone if nothing else does (a full group, or an open group whose
 * members have waited since dpq_conn_fec_deadline()). */
bool dpq_conn_fec_send_due(const struct dpq_conn *c, uint64_t now);
/* When an open group's REPAIR goes even though no packet follows (a pause
 * in sending: the window is full, or the application is slow), so that
 * a missing member is rebuilt before loss detection condemns it;
 * UINT64_MAX: no such group. */
uint64_t dpq_conn_fec_deadline(const struct dpq_conn *c);
/* A 1-RTT packet pn starts at p (payload limit *end): writes a due
 * REPAIR frame first, or keeps the group's reserve off *end. Returns
 * the new p, or NULL if a due REPAIR does not fit in this packet (build
 * no 1-RTT packet in this datagram). *repair says whether one was
 * written (the caller records it: ack-eliciting, DPQ_SENT_REC_FEC_REPAIR
 * with *first, *count). */
uint8_t *dpq_conn_fec_begin_packet(struct dpq_conn *c, uint64_t pn,
		uint8_t *p, uint8_t **end, bool *repair, uint64_t *first,
		uint32_t *count, uint64_t now);
/* The 1-RTT packet pn is complete, payload [payload, payload + len). */
void dpq_conn_fec_end_packet(struct dpq_conn *c, uint64_t pn,
		const uint8_t *payload, size_t len, bool ack_eliciting);
/* The sender has nothing more to send: send an open group's REPAIR. */
void dpq_conn_fec_on_idle(struct dpq_conn *c);
/* RECOVERED frame for packets we rebuilt, before an ACK frame. */
uint8_t *dpq_conn_fec_write_recovered(struct dpq_conn *c, uint8_t *p,
		const uint8_t *end);
/* The burst is built: XOR its plaintexts (before the seal). */
void dpq_conn_fec_pass(struct dpq_conn *c);
/* An ack-eliciting packet of ours was declared lost. */
void dpq_conn_fec_on_lost(struct dpq_conn *c, enum dpq_pn_space sp,
		const struct dpq_sent_pkt *pkt);
/* Receiver: is the frame at p one of the extension's? */
bool dpq_conn_fec_is_frame(const struct dpq_conn *c, const uint8_t *p,
		const uint8_t *end, uint64_t *type);
/* Handle the extension's frame at p in a packet of pkt_type; returns the
 * bytes it took, or a DPQ_TE_ERR() to close with. */
ssize_t dpq_conn_fec_on_frame(struct dpq_conn *c, enum dpq_pkt_type pkt_type,
		const uint8_t *p, const uint8_t *end, uint64_t now);
/* The 1-RTT packet pn was processed (its payload still in place). */
void dpq_conn_fec_on_rx(struct dpq_conn *c, uint64_t pn,
		const uint8_t *payload, size_t len, uint64_t now);

/* conn_recv.c: process the frames of a packet the receiver rebuilt. */
int dpq_conn_rx_rebuilt(struct dpq_conn *c, uint64_t pn,
		const uint8_t *payload, size_t len, uint64_t now);

/* conn.c */
void dpq_conn_set_state(struct dpq_conn *c, enum dpq_conn_state to);
void dpq_conn_close_transport(struct dpq_conn *c, uint64_t error,
		uint64_t frame_type, const char *reason);
void dpq_conn_enter_draining(struct dpq_conn *c, uint64_t now);
void dpq_conn_discard_epoch(struct dpq_conn *c, enum dpq_epoch e,
		uint64_t now);
void dpq_conn_confirm_handshake(struct dpq_conn *c, uint64_t now);
void dpq_conn_deliver_crypto(struct dpq_conn *c, enum dpq_epoch e);
void dpq_conn_on_peer_activity(struct dpq_conn *c, uint64_t now);
void dpq_conn_on_handshake_packet(struct dpq_conn *c);
uint64_t dpq_conn_pto(const struct dpq_conn *c);

static inline enum dpq_pn_space
dpq_epoch_space(enum dpq_epoch e)
{
	return e == DPQ_EPOCH_INITIAL ? DPQ_PN_SPACE_INITIAL :
		e == DPQ_EPOCH_HANDSHAKE ? DPQ_PN_SPACE_HANDSHAKE :
		DPQ_PN_SPACE_APP;
}

static inline enum dpq_epoch
dpq_pkt_type_epoch(enum dpq_pkt_type t)
{
	switch (t) {
	case DPQ_PKT_INITIAL:
		return DPQ_EPOCH_INITIAL;
	case DPQ_PKT_0RTT:
		return DPQ_EPOCH_0RTT;
	case DPQ_PKT_HANDSHAKE:
		return DPQ_EPOCH_HANDSHAKE;
	default:
		return DPQ_EPOCH_1RTT;
	}
}

/* The RTT that drives receive-window auto-tuning (engine/flow.h): none
 * (no growth) while the shard's memory budget is tight. */
static inline uint64_t
dpq_conn_tune_rtt(const struct dpq_conn *c)
{
	return dpq_membudget_tight(c->budget) ? 0 : c->b->loss.rtt.smoothed;
}

static inline bool
dpq_conn_is_closing(const struct dpq_conn *c)
{
	return c->state >= DPQ_CONN_CLOSING;
}

/* conn_park.c: unpack the body and expand the 1-RTT keys again (0, or
 * -ENOMEM: the connection is closed, still parked); free the parked
 * form at destroy. */
int dpq_conn_unpark(struct dpq_conn *c);
void dpq_conn_park_free(struct dpq_conn *c);
/* Read-only calls on a parked connection (c->b NULL) read a copy with
 * the body unpacked: c itself if it is not parked, else pk's. */
struct dpq_conn_peek {
	struct dpq_conn c;
	struct dpq_conn_body b;
};
const struct dpq_conn *dpq_conn_peek(const struct dpq_conn *c,
		struct dpq_conn_peek *pk);
/* Parked: dpq_conn_next_timeout() as it was at park; the active path's
 * tuple. */
uint64_t dpq_conn_parked_timeout(const struct dpq_conn *c);
const struct dpq_tuple *dpq_conn_parked_tuple(const struct dpq_conn *c);

/* Every call that may change the connection begins here: a parked one
 * is unparked (false: out of memory, it is closed now). */
static inline bool
dpq_conn_awake(struct dpq_conn *c)
{
	return c->b != NULL || dpq_conn_unpark(c) == 0;
}

/* Write keys of epoch e installed (parked 1-RTT keys count). */
static inline bool
dpq_conn_has_tx_key(const struct dpq_conn *c, enum dpq_epoch e)
{
	return c->tx[e] != NULL || (e == DPQ_EPOCH_1RTT && c->parked != NULL);
}

/* The connection may have gained work outside the owner's recv, poll,
 * on_timeout and build calls: tell the owner (conn.h, wake-up contract).
 * Every entry point through which the handshake service or the
 * application can create work calls it; harmless when redundant. */
static inline void
dpq_conn_wake(struct dpq_conn *c)
{
	if (c->wake != NULL)
		c->wake(c->wake_arg, c);
}

/* conn_trace.c: call only when c->trace is set. */
void dpq_conn_trace_sent(struct dpq_conn *c, enum dpq_epoch e, uint64_t pn,
		uint32_t len, const struct dpq_sent_rec *recs, size_t nrec,
		bool padded, bool probe, bool close);
void dpq_conn_trace_frame(struct dpq_trace_pkt *tp, const struct dpq_frame *f);
void dpq_conn_trace_received(struct dpq_conn *c, enum dpq_epoch e, uint64_t pn,
		uint32_t len, const struct dpq_trace_pkt *tp);
void dpq_conn_trace_lost(struct dpq_conn *c, enum dpq_pn_space sp,
		const struct dpq_sent_pkt *pkt);
void dpq_conn_trace_metrics(struct dpq_conn *c);
/* PACKET_DROPPED or PACKET_BUFFERED of the packet at pkt (its first byte
 * names its epoch), pn UINT64_MAX if it did not open. */
void dpq_conn_trace_dropped(struct dpq_conn *c, enum dpq_trace_type type,
		const uint8_t *pkt, uint32_t len, uint64_t pn,
		enum dpq_trace_drop_trigger why);
/* The trigger of a refusal errno from the receive path. */
enum dpq_trace_drop_trigger dpq_conn_drop_trigger(int err);
/* CONN_CLOSED from c->close, or ABANDONED with reason why. */
void dpq_conn_trace_closed(struct dpq_conn *c, const char *abandoned_why);

struct dpq_pp_key *dpq_conn_key_alloc(struct dpq_conn *c);
void dpq_conn_key_free(struct dpq_conn *c, struct dpq_pp_key **kp);

/* conn_keys.c: 1-RTT key update (RFC 9001 §6) and AEAD limits (§6.6). */
void dpq_conn_keys_init(struct dpq_conn *c);
void dpq_conn_keys_free(struct dpq_conn *c);
/* Derive the next generation where it is missing: never while a packet
 * is being opened (§9.5), so the first packet of a new key phase takes
 * as long to open as any other. */
void dpq_conn_keys_prepare(struct dpq_conn *c);
/* Pick the key for a 1-RTT packet whose header protection is off. */
void dpq_conn_keys_select(struct dpq_conn *c, struct dpq_open_op *op);
/* A 1-RTT packet opened: 0, a transport error (closing), or -ENOKEY
 * (drop it). Follows a key update the peer started (§6.2). */
int dpq_conn_keys_on_open(struct dpq_conn *c, const struct dpq_open_op *op,
		uint64_t now);
void dpq_conn_keys_on_auth_fail(struct dpq_conn *c);
/* Builder: a 1-RTT packet with number pn is sealed with tx keys; an ACK
 * frame went into a 1-RTT packet. */
void dpq_conn_keys_on_sent(struct dpq_conn *c, uint64_t pn);
void dpq_conn_keys_on_ack_sent(struct dpq_conn *c);
/* The peer acknowledged 1-RTT packets up to largest. */
void dpq_conn_keys_on_acked(struct dpq_conn *c, uint64_t largest,
		uint64_t now);
/* Before building: start a key update that is due and allowed. */
void dpq_conn_keys_tx_check(struct dpq_conn *c, uint64_t now);
void dpq_conn_keys_tx_done(struct dpq_conn *c);
uint64_t dpq_conn_keys_deadline(const struct dpq_conn *c);
void dpq_conn_keys_on_timeout(struct dpq_conn *c, uint64_t now);

/* conn.c: the one writer of c->early. */
void dpq_conn_set_early(struct dpq_conn *c, enum dpq_conn_early e);

/* conn_stream.c */
/* Local streams' send limits up to the peer's (new) initial values. */
void dpq_conn_streams_raise_send_max(struct dpq_conn *c);
/* Some local stream sent beyond the peer's initial stream limit. */
bool dpq_conn_streams_over_send_max(const struct dpq_conn *c);
struct dpq_qstream *dpq_conn_stream_find(struct dpq_conn *c, uint64_t id);
/* Find or, for a peer-initiated id within limits, create. *err gets a
 * transport error DPQ_TE_ERR(code) when the frame must close the
 * connection. */
struct dpq_qstream *dpq_conn_stream_get_peer(struct dpq_conn *c, uint64_t id,
		uint64_t frame_type, int *err);
void dpq_conn_stream_schedule(struct dpq_conn *c, struct dpq_qstream *qs);
void dpq_conn_stream_unschedule(struct dpq_conn *c, struct dpq_qstream *qs);
void dpq_conn_stream_events(struct dpq_conn *c, struct dpq_qstream *qs);
void dpq_conn_streams_reschedule(struct dpq_conn *c);
void dpq_conn_streams_free(struct dpq_conn *c);
/* No streams: free the (empty) stream table until the next stream. */
void dpq_conn_streams_trim(struct dpq_conn *c);
int dpq_conn_streams_init(struct dpq_conn *c);

/* conn_path.c */
void dpq_conn_paths_init(struct dpq_conn *c, const struct dpq_tuple *t,
		bool validated);
/* Free what the paths allocated (the fallback's saved state). */
void dpq_conn_paths_free(struct dpq_conn *c);
struct dpq_path *dpq_conn_path_find(struct dpq_conn *c,
		const struct dpq_tuple *t);
struct dpq_path *dpq_conn_path_for_rx(struct dpq_conn *c,
		const struct dpq_rx_info *ri, size_t dgram_len, uint64_t now);
void dpq_conn_path_credit(struct dpq_conn *c, struct dpq_path *p,
		size_t bytes, uint64_t now);
void dpq_conn_path_validated(struct dpq_conn *c, struct dpq_path *p,
		uint64_t now);
void dpq_conn_path_on_challenge(struct dpq_conn *c, struct dpq_path *p,
		const uint8_t *data);
void dpq_conn_path_on_response(struct dpq_conn *c, const uint8_t *data,
		uint64_t now);
void dpq_conn_path_on_packet(struct dpq_conn *c, struct dpq_path *p,
		const uint8_t *dcid, size_t dcid_len, bool non_probing,
		bool newest, uint64_t now);
void dpq_conn_paths_cids_changed(struct dpq_conn *c);
uint64_t dpq_conn_path_allowance(const struct dpq_conn *c,
		const struct dpq_path *p);
void dpq_conn_path_on_sent(struct dpq_conn *c, struct dpq_path *p,
		size_t bytes, uint64_t now);
/* Builder: next PATH_CHALLENGE data for p if one is due (false if not);
 * whether p has a peer CID to send with (one is taken if needed). */
bool dpq_conn_path_take_challenge(struct dpq_conn *c, struct dpq_path *p,
		uint8_t *data, uint64_t now);
bool dpq_conn_path_can_send(struct dpq_conn *c, struct dpq_path *p);
const struct dpq_cid *dpq_conn_path_dcid(const struct dpq_conn *c,
		const struct dpq_path *p);
uint64_t dpq_conn_paths_next_timeout(const struct dpq_conn *c);
void dpq_conn_paths_on_timeout(struct dpq_conn *c, uint64_t now);

static inline struct dpq_path *
dpq_conn_active_path(struct dpq_conn *c)
{
	return &c->b->paths[c->active];
}

/* conn_cid.c */
void dpq_conn_cids_init(struct dpq_conn *c, const struct dpq_conn_init *in);
void dpq_conn_cids_replenish(struct dpq_conn *c);
int dpq_conn_cid_on_retire(struct dpq_conn *c, uint64_t seq);
bool dpq_conn_cids_announce_pending(const struct dpq_conn *c);
void dpq_conn_cid_on_lost(struct dpq_conn *c, uint64_t seq);
/* Queue RETIRE_CONNECTION_ID for the peer's CID seq; false (connection
 * closing with CONNECTION_ID_LIMIT_ERROR) when too many are pending. */
bool dpq_conn_retire_push(struct dpq_conn *c, uint64_t seq);

/* conn_recv.c */
void dpq_conn_replay_buffered(struct dpq_conn *c, uint64_t now);
/* Retire peer_cids[i] (RETIRE_CONNECTION_ID queued, RFC 9000 §5.1.2). */
void dpq_conn_retire_peer_cid(struct dpq_conn *c, unsigned int i);

/* conn.c: the client sends 0-RTT now (keys, remembered limits, not yet
 * 1-RTT). */
static inline bool
dpq_conn_early_send(const struct dpq_conn *c)
{
	return c->role == DPQ_ROLE_CLIENT && c->tx[DPQ_EPOCH_0RTT] != NULL &&
		c->early_tp && !c->hs_complete;
}

/* Application data may go in 1-RTT packets: the handshake is complete,
 * or (server) 0-RTT was accepted: 0.5-RTT data (RFC 9001 §4.1.1). */
static inline bool
dpq_conn_app_ready(const struct dpq_conn *c)
{
	return c->hs_complete || (c->role == DPQ_ROLE_SERVER &&
			c->early_ready && c->tx[DPQ_EPOCH_1RTT] != NULL);
}

/* conn_send.c */
void dpq_conn_resend_initial(struct dpq_conn *c);
/* n probe packets in space sp, carrying its unacknowledged data (RFC
 * 9002 §6.2.4). */
void dpq_conn_arm_probes(struct dpq_conn *c, enum dpq_pn_space sp,
		uint32_t n);
/* The pacing rate now (bytes/s), DPQ_PACER_UNPACED when not pacing. */
uint64_t dpq_conn_pacing_rate(const struct dpq_conn *c);
/* When data waiting only for the pacer may go (> c->now), or UINT64_MAX
 * if nothing waits for it (for dpq_conn_next_timeout()). */
uint64_t dpq_conn_pacing_wakeup(const struct dpq_conn *c);
/* RFC 9002 §6.2.3: the peer seems to have missed our Initial flight;
 * resend unacknowledged CRYPTO data now (a few times per connection). */
void dpq_conn_resend_crypto_early(struct dpq_conn *c);
void dpq_conn_on_acked(void *ctx, enum dpq_pn_space space,
		const struct dpq_sent_pkt *pkt);
void dpq_conn_on_lost(void *ctx, enum dpq_pn_space space,
		const struct dpq_sent_pkt *pkt);
void dpq_conn_on_requeue(void *ctx, enum dpq_pn_space space,
		const struct dpq_sent_pkt *pkt);
void dpq_conn_ack_only_acked(struct dpq_conn *c, enum dpq_pn_space sp,
		const struct dpq_ack_range *r, size_t n);

#endif /* DPQ_QUIC_CONN_INT_H */
