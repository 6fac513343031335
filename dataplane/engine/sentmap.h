/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sentmap.h: the packets sent in one packet number space and not yet
 * acknowledged or declared lost (RFC 9002 Appendix A.1), each with
 * compact records of what it carried.
 *
 * On loss, the records say which data and control frames to queue again:
 * a lost packet is never re-sent as such (RFC 9000 §13.3); its STREAM and
 * CRYPTO ranges, flow-control updates and so on go back to their owners.
 * On acknowledgment they tell owners what the peer now has (an {ACK
 * largest} record lets the receiver forget ACK ranges, RFC 9000 §13.2.4).
 *
 * Storage is a list of fixed-size blocks of 32-byte slots from the
 * injected allocator; a packet takes a two-slot header followed by its
 * records, contiguous inside one block. Appending is O(1) (packet numbers
 * must increase), walking is oldest first, and blocks whose packets are
 * all gone are kept for reuse (a few) or freed. The number of outstanding
 * packets is capped so a peer that never acknowledges cannot make us
 * grow without bound.
 *
 * Used by one thread (the shard that owns the connection).
 */
#ifndef DPQ_ENGINE_SENTMAP_H
#define DPQ_ENGINE_SENTMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dataplane/engine/mem.h"

/* Slots per block (a block is 2 KiB of slots plus a small header). */
#define DPQ_SENTMAP_BLOCK_SLOTS		64
/* Slots a packet header takes. */
#define DPQ_SENT_HDR_SLOTS		2
/* Most records one packet may carry: they share a block with its header. */
#define DPQ_SENTMAP_MAX_RECS		(DPQ_SENTMAP_BLOCK_SLOTS - DPQ_SENT_HDR_SLOTS)
/* Default cap on outstanding packets per space (about 16 MiB of 1 KiB
 * packets: far above any window we open, well below memory trouble). */
#define DPQ_SENTMAP_DEFAULT_MAX_PACKETS	16384
/* Empty blocks kept for reuse instead of going back to the allocator. */
#define DPQ_SENTMAP_SPARE_BLOCKS	4

/* What a sent packet carried (RFC 9000 §19 frame kinds). */
enum dpq_sent_rec_kind {
	DPQ_SENT_REC_NONE = 0,
	DPQ_SENT_REC_STREAM,		/* stream: id, off; len; FIN flag */
	DPQ_SENT_REC_CRYPTO,		/* crypto: off; len */
	DPQ_SENT_REC_ACK,		/* ack: largest acknowledged */
	DPQ_SENT_REC_PING,
	DPQ_SENT_REC_MAX_DATA,		/* max_data: value sent */
	DPQ_SENT_REC_MAX_STREAM_DATA,	/* max_stream_data: id, value */
	DPQ_SENT_REC_MAX_STREAMS,	/* max_streams: value; UNI flag */
	DPQ_SENT_REC_DATA_BLOCKED,	/* blocked: limit */
	DPQ_SENT_REC_STREAM_DATA_BLOCKED, /* stream_blocked: id, limit */
	DPQ_SENT_REC_STREAMS_BLOCKED,	/* blocked: limit; UNI flag */
	DPQ_SENT_REC_NEW_CONNECTION_ID,	/* new_cid: seq, retire_prior_to */
	DPQ_SENT_REC_RETIRE_CONNECTION_ID, /* retire_cid: seq */
	DPQ_SENT_REC_HANDSHAKE_DONE,
	DPQ_SENT_REC_RESET_STREAM,	/* reset_stream: id, error, final */
	DPQ_SENT_REC_STOP_SENDING,	/* stop_sending: id, error */
	DPQ_SENT_REC_NEW_TOKEN,		/* new_token: caller's token handle */
	DPQ_SENT_REC_PATH_CHALLENGE,	/* path: 8 data bytes */
	DPQ_SENT_REC_PATH_RESPONSE,	/* path: 8 data bytes */
	DPQ_SENT_REC_FEC_REPAIR,	/* reserved for the XOR-FEC extension */
	DPQ_SENT_REC_KIND_COUNT,
};

/* dpq_sent_rec.flags */
#define DPQ_SENT_REC_FIN	0x01	/* STREAM carried the FIN bit */
#define DPQ_SENT_REC_UNI	0x02	/* MAX_STREAMS/STREAMS_BLOCKED uni */

/* One record, 32 bytes. Which union member is valid follows kind. */
struct dpq_sent_rec {
	uint8_t kind;		/* enum dpq_sent_rec_kind */
	uint8_t flags;		/* DPQ_SENT_REC_* */
	uint16_t reserved;
	uint32_t len;		/* STREAM, CRYPTO: data bytes */
	union {
		struct { uint64_t id, off; } stream;
		struct { uint64_t off; } crypto;
		struct { uint64_t largest; } ack;
		struct { uint64_t value; } max;		/* MAX_DATA/_STREAMS */
		struct { uint64_t id, value; } max_stream_data;
		struct { uint64_t limit; } blocked; /* DATA/STREAMS_BLOCKED */
		struct { uint64_t id, limit; } stream_blocked;
		struct { uint64_t seq, retire_prior_to; } new_cid;
		struct { uint64_t seq; } retire_cid;
		struct { uint64_t id, error, final_size; } reset_stream;
		struct { uint64_t id, error; } stop_sending;
		struct { uint64_t handle; } new_token;
		struct { uint8_t data[8]; } path;
		struct { uint64_t group, first_pn, count; } fec_repair;
		uint64_t raw[3];
	};
};

/* dpq_sent_pkt.flags (RFC 9002 Appendix A.1.1). */
#define DPQ_SENT_ACK_ELICITING	0x01
#define DPQ_SENT_IN_FLIGHT	0x02	/* counts toward bytes_in_flight */
#define DPQ_SENT_PROBE		0x04	/* sent on PTO (informational) */
#define DPQ_SENT_ECT0		0x08	/* IP header carried ECT(0) */
#define DPQ_SENT_USER_MASK	0x0f	/* bits the sender sets */
/* Set by the loss module: the connection was application limited when
 * the packet left (delivery-rate sampling, rate.h). */
#define DPQ_SENT_APP_LIMITED	0x10
/* Set by the loss module: declared lost, kept a while so that a late
 * acknowledgment shows the loss was spurious (RFC 9002 §6.1.1, §6.1.2
 * mention such adaptation). Not in flight any more. */
#define DPQ_SENT_LOST		0x20
/* Set by the loss module: a packet sent after this one (and after the
 * preceding packets still outstanding) was acknowledged (persistent
 * congestion, RFC 9002 §7.6.2). */
#define DPQ_SENT_LATER_ACKED	0x40
/* Set by the loss module with DPQ_SENT_LOST: the packet threshold (not
 * the time threshold) condemned it. */
#define DPQ_SENT_LOST_BY_PN	0x80

/*
 * The header of a sent packet, two slots (64 bytes); nrec records follow.
 * The sender fills pn, bytes and flags; the loss module fills the rest:
 * time_sent and the connection's delivery-rate state at send time (the
 * "P." fields of draft-cheng-iccrg-delivery-rate-estimation §3.2, which
 * BBR reads through struct dpq_cc_ack).
 */
struct dpq_sent_pkt {
	uint64_t pn;
	uint64_t time_sent;	/* us */
	uint64_t delivered;	/* C.delivered when sent */
	union {
		uint64_t delivered_time; /* C.delivered_time when sent */
		uint64_t lost_largest;	/* LOST: largest acked pn then */
	};
	uint64_t first_sent_time; /* C.first_sent_time when sent */
	uint64_t lost;		/* C.lost (bytes) when sent */
	uint32_t tx_in_flight;	/* bytes in flight after sending it */
	uint32_t episode;	/* LOST: the loss episode that declared it */
	uint32_t bytes;		/* sent_bytes: QUIC packet incl. AEAD tag */
	uint16_t nrec;
	uint8_t flags;		/* DPQ_SENT_* */
	uint8_t state;		/* sentmap internal */
};

/* One 32-byte slot of a block: a record, or half of a header. */
union dpq_sent_slot {
	struct dpq_sent_rec rec;
	uint64_t raw[4];
};

_Static_assert(sizeof(struct dpq_sent_rec) == 32, "record is one slot");
_Static_assert(sizeof(struct dpq_sent_pkt) ==
		DPQ_SENT_HDR_SLOTS * sizeof(struct dpq_sent_rec),
		"header is DPQ_SENT_HDR_SLOTS slots");

/* The records of a packet the sentmap returned. */
static inline const struct dpq_sent_rec *
dpq_sent_pkt_recs(const struct dpq_sent_pkt *p)
{
	return (const struct dpq_sent_rec *)(const void *)(p + 1);
}

struct dpq_sentmap_block;

struct dpq_sentmap {
	struct dpq_mem mem;
	struct dpq_sentmap_block *head;		/* oldest */
	struct dpq_sentmap_block *tail;		/* appends go here */
	struct dpq_sentmap_block *spare;	/* reusable empty blocks */
	uint32_t nspare;
	uint32_t count;			/* packets outstanding */
	uint32_t max_packets;
	uint32_t nblocks;		/* linked blocks (not spares) */
	uint64_t largest_pn;		/* largest appended; UINT64_MAX none */
};

/* Position of a walk; only valid until the next append or clear. */
struct dpq_sentmap_iter {
	struct dpq_sentmap_block *blk;
	uint32_t slot;
};

/*
 * Set up an empty map taking blocks from *mem (copied). max_packets caps
 * outstanding packets (0 = DPQ_SENTMAP_DEFAULT_MAX_PACKETS).
 * Returns 0, or -EINVAL if mem lacks alloc or free.
 */
int dpq_sentmap_init(struct dpq_sentmap *sm, const struct dpq_mem *mem,
		uint32_t max_packets);

/* Give every block back to the allocator. The map is empty afterwards
 * and may be used again. */
void dpq_sentmap_destroy(struct dpq_sentmap *sm);
/* Give back the memory not in use: the spare blocks, and every block if
 * no packet is outstanding (an idle connection). Appending allocates
 * again. */
void dpq_sentmap_trim(struct dpq_sentmap *sm);

/* Forget every packet (keeps up to DPQ_SENTMAP_SPARE_BLOCKS blocks). */
void dpq_sentmap_clear(struct dpq_sentmap *sm);

/*
 * Record a sent packet: pkt's header (flags outside DPQ_SENT_USER_MASK and
 * DPQ_SENT_APP_LIMITED cleared) plus nrec records, copied. Returns 0, or:
 *   -EINVAL   pkt->pn is not above every packet number appended before,
 *             or exceeds 2^62-1 (RFC 9000 §12.3), or recs NULL with nrec
 *   -E2BIG    nrec > DPQ_SENTMAP_MAX_RECS (the builder must stop adding
 *             frames to a packet before that)
 *   -ENOBUFS  max_packets packets are outstanding already: the sender
 *             must stop sending in this space until some are acked or lost
 *   -ENOMEM   the allocator failed
 * Nothing is recorded on error.
 */
int dpq_sentmap_append(struct dpq_sentmap *sm, const struct dpq_sent_pkt *pkt,
		const struct dpq_sent_rec *recs, size_t nrec);

static inline uint32_t
dpq_sentmap_count(const struct dpq_sentmap *sm)
{
	return sm->count;
}

/* Oldest outstanding packet (smallest pn), or NULL if none. */
struct dpq_sent_pkt *dpq_sentmap_first(struct dpq_sentmap *sm,
		struct dpq_sentmap_iter *it);

/* The packet after the iterator's, or NULL at the end. */
struct dpq_sent_pkt *dpq_sentmap_next(struct dpq_sentmap *sm,
		struct dpq_sentmap_iter *it);

/*
 * Remove the iterator's packet (acked, lost or discarded) and return the
 * next one (or NULL); the iterator moves to it. Pointers to the removed
 * packet and its records are invalid afterwards.
 */
struct dpq_sent_pkt *dpq_sentmap_remove(struct dpq_sentmap *sm,
		struct dpq_sentmap_iter *it);

#endif /* DPQ_ENGINE_SENTMAP_H */
