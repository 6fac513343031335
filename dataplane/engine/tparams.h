/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tparams.h: QUIC transport parameters (RFC 9000 §7.4, §18): the struct
 * holding every §18.2 parameter, its encoder and a decoder that applies
 * the rules of §7.4 and §18.2, plus the connection-ID authentication check
 * of §7.3.
 *
 * The blob is carried by TLS in the quic_transport_parameters extension
 * (RFC 9001 §8.2); this module only sees its bytes. Pure C, no I/O, no
 * allocation; safe from any thread.
 *
 * Error channel: 0 on success or
 * DPQ_TE_ERR(DPQ_TE_TRANSPORT_PARAMETER_ERROR) (errors.h), the code RFC
 * 9000 prescribes for every violation handled here.
 */
#ifndef DPQ_ENGINE_TPARAMS_H
#define DPQ_ENGINE_TPARAMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dataplane/engine/errors.h"
#include "dataplane/engine/wire.h"

/* RFC 9000 §18.2 parameter IDs. */
enum dpq_tp_id {
	DPQ_TP_ORIGINAL_DCID			= 0x00,
	DPQ_TP_MAX_IDLE_TIMEOUT			= 0x01,
	DPQ_TP_STATELESS_RESET_TOKEN		= 0x02,
	DPQ_TP_MAX_UDP_PAYLOAD_SIZE		= 0x03,
	DPQ_TP_INITIAL_MAX_DATA			= 0x04,
	DPQ_TP_INITIAL_MAX_STREAM_DATA_BIDI_LOCAL = 0x05,
	DPQ_TP_INITIAL_MAX_STREAM_DATA_BIDI_REMOTE = 0x06,
	DPQ_TP_INITIAL_MAX_STREAM_DATA_UNI	= 0x07,
	DPQ_TP_INITIAL_MAX_STREAMS_BIDI		= 0x08,
	DPQ_TP_INITIAL_MAX_STREAMS_UNI		= 0x09,
	DPQ_TP_ACK_DELAY_EXPONENT		= 0x0a,
	DPQ_TP_MAX_ACK_DELAY			= 0x0b,
	DPQ_TP_DISABLE_ACTIVE_MIGRATION		= 0x0c,
	DPQ_TP_PREFERRED_ADDRESS		= 0x0d,
	DPQ_TP_ACTIVE_CONNECTION_ID_LIMIT	= 0x0e,
	DPQ_TP_INITIAL_SCID			= 0x0f,
	DPQ_TP_RETRY_SCID			= 0x10,
};
#define DPQ_TP_COUNT		0x11
/* Bit of a parameter in struct dpq_tparams.present. */
#define DPQ_TP_BIT(id)		(UINT32_C(1) << (id))
/* §18.2: parameters only a server may send. */
#define DPQ_TP_SERVER_ONLY	(DPQ_TP_BIT(DPQ_TP_ORIGINAL_DCID) | \
				 DPQ_TP_BIT(DPQ_TP_STATELESS_RESET_TOKEN) | \
				 DPQ_TP_BIT(DPQ_TP_PREFERRED_ADDRESS) | \
				 DPQ_TP_BIT(DPQ_TP_RETRY_SCID))

/* Largest encoded blob we accept or produce. Real stacks send a few
 * hundred bytes; this leaves room for GREASE and extensions while
 * bounding the work a peer can cause. */
#define DPQ_TPARAMS_MAX_LEN	4096
/* Unknown parameters kept for extensions (e.g. dpquic's XOR-FEC). */
#define DPQ_TPARAMS_MAX_EXT	8

/* §18.2 defaults and limits. */
#define DPQ_TP_DEFAULT_MAX_UDP_PAYLOAD	65527
#define DPQ_TP_MIN_MAX_UDP_PAYLOAD	1200
#define DPQ_TP_DEFAULT_ACK_DELAY_EXP	3
#define DPQ_TP_MAX_ACK_DELAY_EXP	20
#define DPQ_TP_DEFAULT_MAX_ACK_DELAY	25		/* ms */
#define DPQ_TP_MAX_ACK_DELAY_LIMIT	(1u << 14)	/* exclusive, ms */
#define DPQ_TP_DEFAULT_ACTIVE_CID_LIMIT	2
#define DPQ_TP_MAX_STREAMS_LIMIT	(UINT64_C(1) << 60)

/* §18.2 Preferred Address. */
struct dpq_preferred_address {
	uint8_t ipv4[4];
	uint16_t ipv4_port;
	uint8_t ipv6[16];
	uint16_t ipv6_port;
	struct dpq_cid cid;		/* 1..20 bytes */
	uint8_t reset_token[DPQ_RESET_TOKEN_LEN];
};

/*
 * A parameter outside §18.2, kept by value pointer + length. Decoded
 * entries point into the decoded blob (valid while it is); for encoding,
 * the caller points them at its own bytes. This is the hook for dpquic's
 * private extensions (XOR-FEC, ...): each extension module encodes and
 * decodes its own value.
 */
struct dpq_tparam_ext {
	uint64_t id;
	const uint8_t *value;
	size_t len;
};

/*
 * Every §18.2 parameter. present has DPQ_TP_BIT(id) set for each parameter
 * received (decode) or to be sent (encode); absent parameters hold their
 * defaults after dpq_tparams_init_defaults() or a decode.
 */
struct dpq_tparams {
	uint32_t present;
	struct dpq_cid original_dcid;
	uint64_t max_idle_timeout;		/* ms, 0 = no timeout */
	uint8_t stateless_reset_token[DPQ_RESET_TOKEN_LEN];
	uint64_t max_udp_payload_size;
	uint64_t initial_max_data;
	uint64_t initial_max_stream_data_bidi_local;
	uint64_t initial_max_stream_data_bidi_remote;
	uint64_t initial_max_stream_data_uni;
	uint64_t initial_max_streams_bidi;
	uint64_t initial_max_streams_uni;
	uint64_t ack_delay_exponent;
	uint64_t max_ack_delay;			/* ms */
	bool disable_active_migration;
	struct dpq_preferred_address preferred_address;
	uint64_t active_connection_id_limit;
	struct dpq_cid initial_scid;
	struct dpq_cid retry_scid;
	/* extension parameters (see struct dpq_tparam_ext) */
	size_t n_ext;
	struct dpq_tparam_ext ext[DPQ_TPARAMS_MAX_EXT];
	size_t n_ext_dropped;	/* decode: unknown ones not kept */
};

/* Zero everything, present = 0, and set the §18.2 defaults. */
void dpq_tparams_init_defaults(struct dpq_tparams *tp);

/* Is parameter id present? */
static inline bool
dpq_tparams_has(const struct dpq_tparams *tp, enum dpq_tp_id id)
{
	return (tp->present & DPQ_TP_BIT(id)) != 0;
}

/* Is id reserved for GREASE (31 * N + 27, §18.1)? */
static inline bool
dpq_tparams_is_reserved(uint64_t id)
{
	return id >= 27 && (id - 27) % 31 == 0;
}

/*
 * Encode the present parameters, then tp->ext[0..n_ext), as sent by an
 * endpoint of role sender. Integers use their shortest varint. Returns the
 * pointer past the blob, or NULL if it does not fit, exceeds
 * DPQ_TPARAMS_MAX_LEN, a value is out of its §18.2 range, a client would
 * send a server-only parameter, or an ext id is a §18.2 id or repeated.
 */
uint8_t *dpq_tparams_encode(uint8_t *p, const uint8_t *end,
		enum dpq_role sender, const struct dpq_tparams *tp);

/*
 * Decode a blob sent by an endpoint of role sender into *tp (defaults for
 * absent parameters). Unknown parameters and reserved ones (31*N+27) are
 * ignored (§7.4.2, §18.1), except that unknown non-reserved ids listed in
 * keep_ids[0..n_keep) are kept in tp->ext (keep_ids == NULL: keep any
 * unknown id, up to DPQ_TPARAMS_MAX_EXT; the rest count in n_ext_dropped).
 *
 * Returns 0, or DPQ_TE_ERR(DPQ_TE_TRANSPORT_PARAMETER_ERROR) for: a
 * truncated parameter, a blob longer than DPQ_TPARAMS_MAX_LEN, a
 * duplicate (§7.4; §18.2 ids and kept ids), a server-only parameter from
 * a client (§18.2), a value whose length does not match its type,
 * max_udp_payload_size < 1200, ack_delay_exponent > 20, max_ack_delay
 * >= 2^14,
 * active_connection_id_limit < 2, initial_max_streams_* > 2^60, a CID
 * longer than 20, a preferred_address with a zero-length CID (§18.2).
 */
int dpq_tparams_decode(const uint8_t *p, const uint8_t *end,
		enum dpq_role sender, const uint64_t *keep_ids, size_t n_keep,
		struct dpq_tparams *tp);

/* What an endpoint saw in the handshake, for dpq_tparams_check_cids(). */
struct dpq_cid_auth {
	/* SCID of the first Initial packet received from the peer. */
	struct dpq_cid peer_scid;
	/* Client only: DCID of its first Initial (before any Retry). */
	struct dpq_cid odcid;
	/* Client only: whether a Retry was accepted, and its SCID. */
	bool retry;
	struct dpq_cid retry_scid;
};

/*
 * RFC 9000 §7.3 connection-ID authentication of the peer's parameters,
 * checked by an endpoint of role local:
 *  - initial_source_connection_id present and equal to a->peer_scid;
 *  - local client: original_destination_connection_id present and equal
 *    to a->odcid; retry_source_connection_id present iff a->retry, and
 *    then equal to a->retry_scid;
 *  - local client: no preferred_address from a server using a zero-length
 *    CID (§18.2).
 * Returns 0 or DPQ_TE_ERR(DPQ_TE_TRANSPORT_PARAMETER_ERROR).
 */
int dpq_tparams_check_cids(const struct dpq_tparams *peer,
		enum dpq_role local, const struct dpq_cid_auth *a);

#endif /* DPQ_ENGINE_TPARAMS_H */
