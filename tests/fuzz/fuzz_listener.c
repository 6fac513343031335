/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The listener (dataplane/server/listener.c): raw datagrams from many
 * sources, and tokens, against a shard's new-connection policy with its
 * half-open bound. The input is a sequence of records:
 *   u8 flags, u16 time step (us), u16 length, bytes
 * flags: bits 0-1 source (4 IPv4 hosts, or IPv6), bits 2-3 what the bytes
 * are (a raw datagram; an Initial whose token is the bytes; an Initial
 * with a real Retry token, one byte of it flipped at a place the bytes
 * choose; the same token unchanged), bit 4: a handshake completes.
 * Replies never amplify: each is shorter than its trigger (RFC 9000 §8,
 * §10.3.3); accepted connections have sane CIDs.
 */
#include <sys/socket.h>

#include "dataplane/engine/packet.h"
#include "dataplane/server/listener.h"
#include "fuzz.h"

#define SLOTS 64

static struct dpq_crypto *cc;
static uint64_t rng_state;

static void
rng_fill(void *ctx, uint8_t *buf, size_t len)
{
	(void)ctx;
	while (len--) {
		rng_state ^= rng_state << 13;
		rng_state ^= rng_state >> 7;
		rng_state ^= rng_state << 17;
		*buf++ = (uint8_t)(rng_state >> 32);
	}
}

static const struct dpq_rand rnd = { rng_fill, NULL };

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	cc = dpq_crypto_create();
	return cc == NULL;
}

static size_t
initial(uint8_t *buf, size_t len, const uint8_t *dcid, size_t dcid_len,
		const uint8_t *tok, size_t tok_len)
{
	static const uint8_t scid[5] = { 0xc1, 0xc2, 0xc3, 0xc4, 0xc5 };
	struct dpq_pkt_long_desc d = { 0 };
	uint8_t *p, *lenf;

	d.type = DPQ_PKT_INITIAL;
	d.version = DPQ_VERSION_1;
	d.dcid = dcid;
	d.dcid_len = dcid_len;
	d.scid = scid;
	d.scid_len = sizeof(scid);
	d.token = tok;
	d.token_len = tok_len;
	d.pn_len = 1;
	p = dpq_pkt_write_long(buf, buf + len, &d, &lenf);
	if (p == NULL)
		return 0;
	memset(p, 0xab, len - (size_t)(p - buf));
	if (dpq_pkt_patch_length(lenf, 1 + len - (size_t)(p - buf)) != 0)
		return 0;
	return len;
}

static void
source(struct dpq_netaddr *a, uint8_t sel)
{
	memset(a, 0, sizeof(*a));
	a->port = 4433;
	if ((sel & 3) == 3) {
		a->family = AF_INET6;
		a->ip[0] = 0x20;
		a->ip[1] = 0x01;
		a->ip[15] = 7;
	} else {
		a->family = AF_INET;
		a->ip[0] = 198;
		a->ip[1] = 18;
		a->ip[3] = (uint8_t)(1 + (sel & 3));
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t key[16] = { 1, 2, 3 };
	static const uint8_t dcid[8] = { 8, 7, 6, 5, 4, 3, 2, 1 };
	struct fuzz_in in = { data, data + size };
	struct dpq_listener_cfg cfg;
	struct dpq_listener_result r;
	struct dpq_listener *l;
	struct dpq_halfopen *ho;
	uint8_t tok[256], dg[1500];
	size_t tok_len = 0, next_slot = 0;
	uint64_t now = 1000000;

	rng_state = 0x9e3779b97f4a7c15ull;
	dpq_listener_cfg_default(&cfg);
	cfg.sreset_key_len = 32;
	cfg.halfopen.max_total = 16;
	cfg.halfopen.max_per_prefix = 4;
	cfg.halfopen.retry_threshold = 8;
	l = dpq_listener_create(&cfg, cc, &rnd, now);
	FUZZ_CHECK(l != NULL);
	FUZZ_CHECK(dpq_listener_set_token_key(l, 1, key) == 0);
	FUZZ_CHECK(dpq_listener_set_slots(l, SLOTS) == 0);
	ho = dpq_listener_halfopen(l);
	/* A real Retry token for the mutations below. */
	cfg.retry = DPQ_RETRY_ALWAYS;
	{
		struct dpq_listener *lr = dpq_listener_create(&cfg, cc, &rnd,
				now);
		struct dpq_netaddr a;
		struct dpq_pkt_hdr h;

		FUZZ_CHECK(lr != NULL);
		FUZZ_CHECK(dpq_listener_set_token_key(lr, 1, key) == 0);
		source(&a, 0);
		initial(dg, 1200, dcid, sizeof(dcid), NULL, 0);
		if (dpq_listener_on_datagram(lr, dg, 1200, &a, now, &r) ==
				DPQ_LISTEN_REPLY &&
		    dpq_pkt_parse(r.reply, r.reply + r.reply_len, 8, &h) == 0 &&
		    h.type == DPQ_PKT_RETRY && h.token_len <= sizeof(tok)) {
			memcpy(tok, h.token, h.token_len);
			tok_len = h.token_len;
		}
		dpq_listener_destroy(lr);
		FUZZ_CHECK(tok_len > 0);
	}
	while (fuzz_left(&in) > 0) {
		uint8_t flags = fuzz_u8(&in);
		uint16_t step = fuzz_u16(&in);
		size_t want = fuzz_u16(&in) % 1500, n, len;
		const uint8_t *b = fuzz_bytes(&in, want, &n);
		struct dpq_netaddr a;
		uint8_t t[256];
		uint32_t victim;

		now += step;
		source(&a, flags);
		switch ((flags >> 2) & 3) {
		case 0:
			memcpy(dg, b, n);
			len = n;
			break;
		case 1:
			len = initial(dg, 1200, dcid, sizeof(dcid), b,
					n < 200 ? n : 200);
			break;
		default:
			memcpy(t, tok, tok_len);
			if (((flags >> 2) & 3) == 2 && n >= 2)
				t[b[0] % tok_len] ^= b[1] | 1;
			len = initial(dg, 1200 + (n & 63), dcid, sizeof(dcid),
					t, tok_len);
			break;
		}
		if (len == 0)
			continue;
		switch (dpq_listener_on_datagram(l, dg, len, &a, now, &r)) {
		case DPQ_LISTEN_REPLY:
			FUZZ_CHECK(r.reply != NULL && r.reply_len > 0);
			/* Never more than the trigger (§8.1, §10.3.3). */
			FUZZ_CHECK(r.reply_len < len);
			break;
		case DPQ_LISTEN_ACCEPT:
			FUZZ_CHECK(r.scid.len == cfg.cid.len);
			FUZZ_CHECK(r.odcid.len <= DPQ_MAX_CID_LEN);
			FUZZ_CHECK(r.initial_dcid.len >= 8);
			/* The shard's bookkeeping. */
			switch (dpq_halfopen_admit(ho, &a,
					false, &victim)) {
			case DPQ_HO_EVICT:
				FUZZ_CHECK(dpq_halfopen_tracked(ho, victim));
				dpq_halfopen_remove(ho, victim, false);
				break;
			case DPQ_HO_REFUSE:
				continue;
			default:
				break;
			}
			while (dpq_halfopen_tracked(ho, next_slot % SLOTS))
				next_slot++;
			FUZZ_CHECK(dpq_halfopen_add(ho, next_slot % SLOTS,
					&a) == 0);
			next_slot++;
			break;
		default:
			break;
		}
		if (flags & 0x10)
			dpq_halfopen_remove(ho, (flags >> 5) % SLOTS, true);
		FUZZ_CHECK(dpq_halfopen_count(ho) <= 16);
		FUZZ_CHECK(dpq_halfopen_count_prefix(ho, &a) <= 4);
	}
	dpq_listener_destroy(l);
	return 0;
}
