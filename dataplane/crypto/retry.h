/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Retry packet integrity tag (RFC 9001 §5.8): AES-128-GCM with the fixed
 * QUIC v1 key and nonce over the Retry pseudo-packet (ODCID length, ODCID,
 * Retry packet without its tag), empty plaintext. Shard only (uses cc).
 */
#ifndef DPQ_CRYPTO_RETRY_H
#define DPQ_CRYPTO_RETRY_H

#include <stddef.h>
#include <stdint.h>

#include "crypto.h"

#define DPQ_RETRY_TAG_LEN 16

/*
 * Compute the tag of a Retry packet. retry/retry_len is the packet without
 * its tag; odcid is the Destination CID of the client's Initial.
 * Returns 0, -EINVAL (odcid_len > 20, NULL) or -EMSGSIZE (retry_len above
 * 1500 bytes).
 */
int
dpq_retry_tag_compute(struct dpq_crypto *cc, const uint8_t *odcid,
		size_t odcid_len, const uint8_t *retry, size_t retry_len,
		uint8_t tag[DPQ_RETRY_TAG_LEN]);

/*
 * Verify a received Retry packet pkt/pkt_len (tag included, last 16
 * bytes). Returns 0 when the tag is right, -EBADMSG when not, -EINVAL
 * (shorter than a tag, bad arguments) or -EMSGSIZE.
 */
int
dpq_retry_tag_verify(struct dpq_crypto *cc, const uint8_t *odcid,
		size_t odcid_len, const uint8_t *pkt, size_t pkt_len);

#endif /* DPQ_CRYPTO_RETRY_H */
