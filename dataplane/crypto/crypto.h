/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Batched QUIC packet protection (RFC 9001 §5.3-§5.4) on Intel ipsec-mb.
 *
 * struct dpq_crypto is one thread's crypto context: it owns an ipsec-mb
 * manager (not thread safe) and the scratch arrays of a burst. A shard
 * creates one and uses it alone (shard only). No DPDK: it runs without EAL.
 *
 * Send: the packet builder fills an array of struct dpq_seal_op and calls
 * dpq_crypto_seal_burst() once per burst: AEAD for every packet (header as
 * AAD, §5.3), then header protection for every packet (§5.4), the AES masks
 * of all packets sharing an HP key computed by one AES-ECB job.
 *
 * Receive mirrors it in two calls so the caller can choose keys in between:
 *   1. dpq_crypto_unprotect_hp_burst(): removes header protection, gives the
 *      unmasked first byte (key phase, reserved bits), pn length and the
 *      full packet number recovered from largest_pn with the codec's
 *      dpq_pkt_pn_decode() (RFC 9000 §A.3);
 *   2. the caller checks reserved bits, picks the AEAD key (key phase,
 *      RFC 9001 §6) into op->key, or sets op->status to skip a packet;
 *   3. dpq_crypto_open_burst(): AEAD-decrypts every op whose status is 0.
 * A bad tag fails only its own op (status -EBADMSG).
 */
#ifndef DPQ_CRYPTO_CRYPTO_H
#define DPQ_CRYPTO_CRYPTO_H

#include <stddef.h>
#include <stdint.h>

/* DPQ_PN_NONE, DPQ_PN_MAX and dpq_pkt_pn_decode() (RFC 9000 §A.3). */
#include "dataplane/engine/packet.h"

#define DPQ_CRYPTO_TAG_LEN 16		/* AEAD tag, all QUIC v1 AEADs */
#define DPQ_CRYPTO_IV_LEN 12		/* AEAD nonce (RFC 9001 §5.3) */
#define DPQ_CRYPTO_HP_SAMPLE_LEN 16	/* RFC 9001 §5.4.2 */
#define DPQ_CRYPTO_HP_SAMPLE_OFFSET 4	/* sample = pn_offset + 4 */
#define DPQ_CRYPTO_PN_LEN_MAX 4
/* A burst call handles any n; it works internally in chunks of this size. */
#define DPQ_CRYPTO_BURST_MAX 64

struct dpq_crypto;
struct dpq_pp_key;

/*
 * Create a context for the calling thread (ipsec-mb manager picked by
 * init_mb_mgr_auto). Returns NULL with errno set (ENOMEM, or ENOTSUP when
 * ipsec-mb rejects the CPU).
 */
struct dpq_crypto *
dpq_crypto_create(void);

/* Free a context (NULL is allowed). Keys made with it stay usable by other
 * contexts of the same ipsec-mb architecture. */
void
dpq_crypto_destroy(struct dpq_crypto *cc);

/* Name of the ipsec-mb code path in use ("avx512", "avx2", ...). */
const char *
dpq_crypto_arch_name(const struct dpq_crypto *cc);

/* An expanded AES encryption key for ECB use (header protection, tokens). */
struct dpq_aes_key {
	uint8_t enc[15 * 16] __attribute__((aligned(16)));
	uint8_t key_len;	/* 16 or 32 */
};

/* Expand a 16- or 32-byte AES key. Returns 0 or -EINVAL. */
int
dpq_aes_key_init(struct dpq_crypto *cc, struct dpq_aes_key *k,
		const uint8_t *raw, size_t raw_len);

/* Zero an expanded AES key. */
void
dpq_aes_key_destroy(struct dpq_aes_key *k);

/*
 * AES-ECB encryption of nblocks 16-byte blocks from in to out (may be the
 * same buffer), one ipsec-mb job. Returns 0, -EINVAL (nblocks 0 or above
 * 4096) or -EIO (ipsec-mb error).
 */
int
dpq_crypto_aes_ecb_encrypt(struct dpq_crypto *cc, const struct dpq_aes_key *k,
		const uint8_t *in, uint8_t *out, size_t nblocks);

/*
 * One packet to protect, in place. pkt holds the header (whose last
 * pn_len bytes, at pn_offset, already carry the truncated packet number,
 * and whose first byte's two low bits say pn_len - 1) followed by the
 * plaintext payload, len bytes in all; the buffer must have room for the
 * DPQ_CRYPTO_TAG_LEN-byte tag at pkt + len. RFC 9001 §5.4.2 requires
 * pn_offset + 4 <= len (pad the payload of short packets).
 */
struct dpq_seal_op {
	const struct dpq_pp_key *key;
	uint8_t *pkt;
	uint64_t pn;		/* full packet number, for the nonce */
	uint16_t len;		/* header + payload, tag excluded */
	uint16_t pn_offset;	/* offset of the packet number field */
	uint8_t pn_len;		/* 1..4 */
	int status;		/* out: 0, -EINVAL (bad op), -EIO */
};

/*
 * Protect n packets: AEAD then header protection. Returns the number of
 * ops sealed (status 0); a failed op leaves the others unaffected.
 * Shard only (uses cc's manager).
 */
uint16_t
dpq_crypto_seal_burst(struct dpq_crypto *cc, struct dpq_seal_op *ops,
		uint16_t n);

/*
 * One received packet (one QUIC packet of a datagram) to unprotect in
 * place. len is the whole protected packet, tag included (for a long
 * header: pn_offset + the Length field; for a short header: the rest of
 * the datagram). After a successful open the plaintext payload is at
 * pkt + pn_offset + pn_len, len - pn_offset - pn_len - 16 bytes long.
 * The last 16 bytes (tag) are never modified, so a caller can still test
 * them for a Stateless Reset token (RFC 9000 §10.3.1) when opening fails.
 */
struct dpq_open_op {
	const struct dpq_pp_key *key;	/* in: HP key for step 1, AEAD key
					 * for step 3 (may be swapped) */
	uint8_t *pkt;
	uint64_t largest_pn;	/* in: largest pn received in this packet
				 * number space, or DPQ_PN_NONE */
	uint64_t pn;		/* out (step 1): recovered packet number */
	uint32_t pn_trunc;	/* out (step 1): packet number as sent */
	uint16_t len;		/* in: protected packet length, tag included */
	uint16_t pn_offset;	/* in: offset of the packet number field */
	uint8_t first_byte;	/* out (step 1): unprotected first byte */
	uint8_t pn_len;		/* out (step 1): 1..4 */
	uint8_t key_tag;	/* the caller's note of which key it chose
				 * in step 2 (crypto ignores it) */
	int status;		/* out: 0, -EINVAL (too short, bad op,
				 * recovered pn above DPQ_PN_MAX),
				 * -EBADMSG (authentication failed), -EIO */
};

/*
 * Step 1: remove header protection of n packets (RFC 9001 §5.4): the
 * first byte and packet number bytes are unmasked in pkt, and first_byte,
 * pn_len, pn_trunc and pn are filled. Every op's status is written.
 * Returns the number of ops with status 0. Shard only.
 */
uint16_t
dpq_crypto_unprotect_hp_burst(struct dpq_crypto *cc, struct dpq_open_op *ops,
		uint16_t n);

/*
 * Step 3: AEAD-open every op whose status is 0 (others are skipped and
 * keep their status), using op->key and op->pn. Returns the number of ops
 * opened (status 0). Shard only.
 */
uint16_t
dpq_crypto_open_burst(struct dpq_crypto *cc, struct dpq_open_op *ops,
		uint16_t n);

#endif /* DPQ_CRYPTO_CRYPTO_H */
