/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Packets a test (or a fuzz target) builds as if it were the peer: a
 * header of the given type, the caller's frame bytes as the payload,
 * PADDING up to a datagram size, sealed with a packet protection key
 * (RFC 9001 §5). The connection under test then opens them like any
 * packet from the wire, so the frames reach frame processing.
 */
#ifndef DPQ_TESTS_PEER_SEAL_H
#define DPQ_TESTS_PEER_SEAL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "dataplane/crypto/pp_key.h"
#include "dataplane/engine/packet.h"
#include "dataplane/engine/wire.h"

struct peer_pkt {
	enum dpq_pkt_type type;		/* Initial, Handshake or 1-RTT */
	const struct dpq_cid *dcid;
	const struct dpq_cid *scid;	/* long headers */
	const uint8_t *token;		/* Initial */
	size_t token_len;
	uint64_t pn;
	bool key_phase;			/* 1-RTT */
	const uint8_t *frames;
	size_t frames_len;
	size_t pad_to;			/* the packet is at least this long */
};

/* A key on 64-byte aligned memory (NULL on failure). Free with
 * peer_key_free. */
struct dpq_pp_key *peer_key_new(void);
void peer_key_free(struct dpq_pp_key *k);

/* Initial key of the client (server = false) or server for dcid. */
struct dpq_pp_key *peer_key_initial(struct dpq_crypto *cc,
		const struct dpq_cid *dcid, bool server);
/* Key from a traffic secret (TLS suite id, e.g. 0x1301). */
struct dpq_pp_key *peer_key_secret(struct dpq_crypto *cc, uint16_t suite,
		const uint8_t *secret, size_t len);

/* Build and seal one packet into buf (cap bytes). Returns its length or
 * -1 if it does not fit or sealing failed. */
ssize_t peer_seal(struct dpq_crypto *cc, const struct dpq_pp_key *key,
		const struct peer_pkt *pk, uint8_t *buf, size_t cap);

#endif
