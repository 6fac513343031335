/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fec.h: the XOR-FEC extension's state machines (docs/fec.md), without
 * the connection: a sender that groups 1-RTT packets and writes REPAIR
 * frames, a receiver that accumulates groups and rebuilds a packet when
 * exactly one member is missing, and the policy that decides whether and
 * with which group size a sender protects its packets.
 *
 * No copy of any packet is kept: the sender XORs each member's plaintext
 * payload into one running accumulator, the receiver into one accumulator
 * per open group (at most DPQ_FEC_RX_GROUPS). Accumulators are allocated
 * from the caller's struct dpq_mem when FEC is first used on a connection,
 * so a connection that never uses it pays nothing but the structs.
 *
 * Pure C: no I/O, no clock, no DPDK; one thread (the connection's shard).
 */
#ifndef DPQ_FEC_FEC_H
#define DPQ_FEC_FEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dataplane/engine/mem.h"
#include "dataplane/fec/fec_wire.h"

/* ---- policy -------------------------------------------------------------- */

enum dpq_fec_mode {
	DPQ_FEC_OFF = 0,	/* never send repairs (still receive them) */
	DPQ_FEC_FIXED,		/* always, groups of `group` packets */
	DPQ_FEC_ADAPTIVE,	/* only while loss is seen; K follows it */
};

struct dpq_fec_policy {
	enum dpq_fec_mode mode;
	uint8_t group;		/* FIXED: K; ADAPTIVE: largest K */
	uint8_t group_min;	/* ADAPTIVE: smallest K */
};

#define DPQ_FEC_DEFAULT_GROUP		16
#define DPQ_FEC_DEFAULT_GROUP_MIN	4
#define DPQ_FEC_MIN_GROUP		2

/*
 * Parse "off", "fixed", "fixed:K", "adaptive" or "adaptive:MIN-MAX"
 * (K, MIN, MAX in 2 .. DPQ_FEC_GROUP_LIMIT, MIN <= MAX). Returns 0, or
 * -EINVAL (*p unchanged).
 */
int dpq_fec_policy_parse(const char *s, struct dpq_fec_policy *p);

/* Write the policy as dpq_fec_policy_parse() reads it ("adaptive:4-16");
 * returns snprintf's count. */
int dpq_fec_policy_str(const struct dpq_fec_policy *p, char *buf,
		size_t len);

/*
 * Loss meter of a sender: packets sent and lost (declared lost by loss
 * recovery, or reported as recovered by the peer: both mean the path
 * dropped them) in windows of DPQ_FEC_METER_WINDOW packets, smoothed
 * across windows (weight 1/4 for the newest). A connection starts from a
 * prior (e.g. its shard's recent loss), so that a short transfer need not
 * lose packets before it is protected.
 */
#define DPQ_FEC_METER_WINDOW	64
/* Below this rate adaptive FEC is off (parts per million). */
#define DPQ_FEC_METER_OFF_PPM	1000

struct dpq_fec_meter {
	uint32_t sent;		/* this window */
	uint32_t lost;		/* this window */
	uint32_t rate_ppm;	/* smoothed loss rate */
	uint64_t total_sent;
	uint64_t total_lost;
};

void dpq_fec_meter_init(struct dpq_fec_meter *m, uint32_t prior_ppm);
void dpq_fec_meter_on_sent(struct dpq_fec_meter *m, uint32_t n);
void dpq_fec_meter_on_lost(struct dpq_fec_meter *m, uint32_t n);

/* The loss rate the policy sees: the smoothed rate, or this window's if
 * it is already higher (so a burst of loss acts within a window). */
uint32_t dpq_fec_meter_rate_ppm(const struct dpq_fec_meter *m);

/*
 * The loss a server (one shard) saw recently, across its connections: the
 * prior of each new connection's meter. Each closing connection adds its
 * packets sent and lost; older ones decay (weight 7/8 per connection), so
 * it follows the path, not the history.
 */
struct dpq_fec_prior {
	uint64_t sent;		/* scaled by 8 per fold */
	uint64_t lost;
};

void dpq_fec_prior_fold(struct dpq_fec_prior *pr, uint64_t sent,
		uint64_t lost);
uint32_t dpq_fec_prior_ppm(const struct dpq_fec_prior *pr);

/*
 * Group size the policy wants now, capped by peer_max (the peer's
 * xor_fec Max Group Size); 0 means send no repairs. ADAPTIVE: 0 below
 * DPQ_FEC_METER_OFF_PPM, else about one repair per four expected losses,
 * K = 1 / (4 p), clamped to [group_min, group].
 */
uint32_t dpq_fec_policy_group(const struct dpq_fec_policy *p,
		const struct dpq_fec_meter *m, uint32_t peer_max);

/* ---- sender ------------------------------------------------------------- */

/* Sender states; transitions only in fec_tx.c. */
enum dpq_fec_tx_state {
	DPQ_FEC_TX_IDLE = 0,	/* no group: packets are not protected */
	DPQ_FEC_TX_ANNOUNCE,	/* next 1-RTT packet announces a group */
	DPQ_FEC_TX_OPEN,	/* a group is announced; packets are members */
	DPQ_FEC_TX_REPAIR_DUE,	/* group closed: next packet carries REPAIR */
};

/* Room a member packet leaves for its group's REPAIR frame: the repair
 * packet's header may be up to 3 bytes longer (packet number length). */
#define DPQ_FEC_TX_RESERVE	(DPQ_FEC_REPAIR_HDR_MAX + 3)

struct dpq_fec_tx_stats {
	uint64_t groups;	/* REPAIR frames with members sent */
	uint64_t members;	/* packets protected */
	uint64_t announces;	/* announcement-only REPAIR frames */
	uint64_t early;		/* groups closed before their size */
	uint64_t repair_bytes;	/* REPAIR frame bytes (the overhead) */
};

struct dpq_fec_tx {
	enum dpq_fec_tx_state state;
	uint64_t first_pn;	/* current group (OPEN, REPAIR_DUE) */
	uint32_t size;		/* announced size */
	uint32_t count;		/* members so far */
	uint32_t max_len;	/* longest member payload */
	uint32_t len_xor;
	bool eliciting;		/* an ack-eliciting member: worth a repair */
	uint64_t frame_pn;	/* packet that carried the last REPAIR */
	uint8_t *acc;		/* running accumulator, cap bytes, or NULL */
	size_t cap;
	struct dpq_mem mem;
	struct dpq_fec_tx_stats stats;
};

/* cap: largest payload of a packet this sender builds. */
void dpq_fec_tx_init(struct dpq_fec_tx *tx, const struct dpq_mem *mem,
		size_t cap);
void dpq_fec_tx_destroy(struct dpq_fec_tx *tx);

/*
 * The policy's group size for the next group (0: none). From IDLE a k > 0
 * asks for an announcement in the next 1-RTT packet; otherwise k is used
 * when the current group's REPAIR is written. Returns 0, or -ENOMEM if
 * the accumulator cannot be allocated (FEC stays idle).
 */
int dpq_fec_tx_want(struct dpq_fec_tx *tx, uint32_t k);

/* Bytes a 1-RTT packet built now must leave free at its end (0 when no
 * group is open). */
static inline size_t
dpq_fec_tx_reserve(const struct dpq_fec_tx *tx)
{
	return tx->state == DPQ_FEC_TX_IDLE ? 0 : DPQ_FEC_TX_RESERVE;
}

/*
 * A 1-RTT packet with number pn is about to be built. If pn is not the
 * open group's next member (the sender skipped a number, RFC 9000 §21.4),
 * the group ends before it and this packet carries its REPAIR (or, for a
 * group still empty, a new announcement): no packet that is not a member
 * may fall inside a group's range. Call before dpq_fec_tx_frame_due().
 */
void dpq_fec_tx_begin_packet(struct dpq_fec_tx *tx, uint64_t pn);

/* Must the 1-RTT packet built now start with a REPAIR frame? */
static inline bool
dpq_fec_tx_frame_due(const struct dpq_fec_tx *tx)
{
	return tx->state == DPQ_FEC_TX_ANNOUNCE ||
		tx->state == DPQ_FEC_TX_REPAIR_DUE;
}

/*
 * Write the due REPAIR frame (an announcement from ANNOUNCE, the closed
 * group's repair from REPAIR_DUE) into the packet pn at p, next_k being
 * the size of the group that starts at pn + 1 (0: none). The Repair Data
 * is left for dpq_fec_tx_pass(): *data and *data_len say where. Returns
 * the pointer past the whole frame, or NULL if it does not fit (state
 * unchanged). The packet pn is not a member of any group.
 */
uint8_t *dpq_fec_tx_write_frame(struct dpq_fec_tx *tx, uint8_t *p,
		const uint8_t *end, uint64_t pn, uint32_t next_k,
		uint8_t **data, uint16_t *data_len);

/*
 * A 1-RTT packet is complete (payload of len bytes, padding included).
 * Returns true if it is a member of the open group (the pass must XOR
 * it); the group then closes when it reaches its size.
 */
bool dpq_fec_tx_on_packet(struct dpq_fec_tx *tx, uint64_t pn, size_t len,
		bool ack_eliciting);

/* The sender has nothing more to send (a transfer's tail): close an open
 * group holding ack-eliciting members so its REPAIR goes now. Returns
 * true if a REPAIR became due. */
bool dpq_fec_tx_close(struct dpq_fec_tx *tx);

/*
 * The XOR pass over a burst, after building and before sealing: segs in
 * packet-number order, each a member payload (repair == NULL) or the
 * Repair Data area of a REPAIR frame (repair != NULL, len = its length),
 * which receives the XOR of its group. Members of a group still open at
 * the end stay in the running accumulator for the next burst.
 */
struct dpq_fec_seg {
	const uint8_t *payload;	/* member */
	uint8_t *repair;	/* repair data area */
	uint16_t len;
};

void dpq_fec_tx_pass(struct dpq_fec_tx *tx, const struct dpq_fec_seg *segs,
		unsigned int n);

/* ---- receiver ---------------------------------------------------------- */

/* Groups a receiver accumulates at once: the one awaiting its REPAIR, the
 * next one, and one more for reordering around a boundary. */
#define DPQ_FEC_RX_GROUPS	3
/* Members queued for one batched XOR (dpq_fec_rx_flush()). */
#define DPQ_FEC_RX_QUEUE	32
/* Recovered packet numbers waiting for a RECOVERED frame. */
#define DPQ_FEC_RX_REPORT	DPQ_FEC_RECOVERED_MAX

struct dpq_fec_rx_group {
	uint64_t first;
	uint64_t have;		/* bit i: member first + i received */
	uint32_t size;		/* announced (or predicted) size */
	uint32_t max_len;	/* bytes of acc that may be non-zero */
	uint32_t len_xor;
	bool used;
	bool predicted;		/* guessed: its announcement was lost */
	bool repaired;		/* REPAIR applied; waiting for all but one */
	bool broken;		/* a member could not be accumulated */
	uint8_t *acc;
};

struct dpq_fec_rx_stats {
	uint64_t repairs;	/* REPAIR frames for a group with members */
	uint64_t recovered;	/* packets rebuilt */
	uint64_t complete;	/* repairs for groups that lost nothing */
	uint64_t unrecoverable;	/* groups dropped with >= 2 missing */
	uint64_t unknown;	/* repairs for a group not accumulated */
	uint64_t predicted;	/* groups opened by prediction */
};

/* A rebuilt packet: process its frames as if pn had arrived, and record
 * it as received. payload is valid during the call only. */
typedef void (*dpq_fec_recovered_fn)(void *ctx, uint64_t pn,
		const uint8_t *payload, size_t len);

struct dpq_fec_rx_item {
	uint64_t pn;
	const uint8_t *payload;
	uint16_t len;
};

struct dpq_fec_rx {
	struct dpq_fec_rx_group g[DPQ_FEC_RX_GROUPS];
	struct dpq_fec_rx_item q[DPQ_FEC_RX_QUEUE];
	unsigned int nq;
	uint64_t report[DPQ_FEC_RX_REPORT];	/* ascending */
	unsigned int nreport;
	uint32_t max_group;	/* what we announced */
	size_t cap;		/* largest payload accepted */
	struct dpq_mem mem;
	dpq_fec_recovered_fn on_recovered;
	void *ctx;
	bool in_recovery;	/* inside on_recovered */
	struct dpq_fec_rx_stats stats;
};

void dpq_fec_rx_init(struct dpq_fec_rx *rx, const struct dpq_mem *mem,
		size_t cap, uint32_t max_group, dpq_fec_recovered_fn fn,
		void *ctx);
void dpq_fec_rx_destroy(struct dpq_fec_rx *rx);

/*
 * A 1-RTT packet pn was received and processed; its payload stays valid
 * until the next dpq_fec_rx_flush() (the receive path flushes before it
 * lets the buffer go). Queued, and XORed into its group in batches.
 */
void dpq_fec_rx_on_packet(struct dpq_fec_rx *rx, uint64_t pn,
		const uint8_t *payload, size_t len);

/* XOR the queued payloads into their groups (one pass per group); may
 * call on_recovered for a group that had its REPAIR and now misses one. */
void dpq_fec_rx_flush(struct dpq_fec_rx *rx);

/*
 * A REPAIR frame arrived (decoded, r->data valid during the call). The
 * caller checked r->size and r->next_size against what we announced
 * (PROTOCOL_VIOLATION otherwise). Flushes the queue first; may call
 * on_recovered. Returns 0, or -ENOMEM (an accumulator could not be
 * allocated: the announced group is not protected).
 */
int dpq_fec_rx_on_repair(struct dpq_fec_rx *rx, const struct dpq_fec_repair *r);

/* Take up to max recovered packet numbers to report, largest first;
 * returns the count. */
size_t dpq_fec_rx_take_report(struct dpq_fec_rx *rx, uint64_t *pn,
		size_t max);

#endif /* DPQ_FEC_FEC_H */
