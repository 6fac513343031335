/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The connection receive path with the fuzzer as the client. A server
 * connection is set up the way the shard and the handshake service do it
 * (Initial keys from the client's DCID; Handshake and 1-RTT secrets, the
 * client's transport parameters and completion through dpq_conn_hs_*(),
 * with fixed secrets), so the fuzzer can seal its packets with the
 * client's keys (tests/lib/peer_seal.c) and every frame reaches frame
 * processing. Input:
 *   u8 mode: bit 0 the handshake completed (else still handshaking, only
 *            Initial and Handshake keys), bit 1 Retry-validated address
 *   then records: u8 kind, u8 time step (ms), u16 length, frame bytes
 *   kind: bits 0-1 packet type (Initial, Handshake, 1-RTT, 1-RTT),
 *         bit 2 repeat the last packet number, bit 3 coalesce with the
 *         next record, bit 4 flip the key phase
 * The server echoes stream data (reads, writes back, FIN) and its output
 * is drained after each datagram. Checked: it never sends an unvalidated
 * address more than 3x what it received (RFC 9000 §8.1), and states only
 * move forward.
 */
#include "dataplane/crypto/suites.h"
#include "dataplane/engine/tparams.h"
#include "dataplane/quic/conn_int.h"
#include "tests/lib/peer_seal.h"
#include "fuzz.h"

static struct dpq_crypto *cc;
static struct dpq_pp_key *k_init, *k_hs, *k_app;
static const uint8_t sec_hs_c[32] = { 0x11, 1 }, sec_hs_s[32] = { 0x22, 2 };
static const uint8_t sec_app_c[32] = { 0x33, 3 }, sec_app_s[32] = { 0x44, 4 };
static struct dpq_cid scid = { .len = 8, .bytes = { 0x5e, 1, 2, 3, 4, 5,
	6, 7 } };
static struct dpq_cid dcid = { .len = 8, .bytes = { 0xdc, 1, 2, 3, 4, 5,
	6, 7 } };
static struct dpq_cid cscid = { .len = 8, .bytes = { 0xc5, 1, 2, 3, 4, 5,
	6, 7 } };

static int
hs_recv(void *hs, struct dpq_conn *c, enum dpq_epoch e, const uint8_t *d,
		size_t len)
{
	(void)hs; (void)c; (void)e; (void)d; (void)len;
	return 0;
}

static const struct dpq_hs_ops hs_ops = { .recv = hs_recv };

static void
echo(struct dpq_conn *c, uint64_t id)
{
	uint8_t buf[4096];
	bool fin = false;
	ssize_t n;

	while ((n = dpq_conn_stream_read(c, id, buf, sizeof(buf), &fin)) > 0)
		if (dpq_conn_stream_write(c, id, buf, (size_t)n, false) < 0)
			break;
	if (fin)
		(void)dpq_conn_stream_write(c, id, NULL, 0, true);
}

static const struct dpq_app_ops app = { .on_stream_data = echo };

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	cc = dpq_crypto_create();
	if (cc == NULL)
		return 1;
	k_init = peer_key_initial(cc, &dcid, false);
	k_hs = peer_key_secret(cc, DPQ_TLS_AES_128_GCM_SHA256, sec_hs_c, 32);
	k_app = peer_key_secret(cc, DPQ_TLS_AES_128_GCM_SHA256, sec_app_c, 32);
	return k_init == NULL || k_hs == NULL || k_app == NULL;
}

static struct dpq_conn *
server(bool complete, bool validated)
{
	struct dpq_conn_conf conf = { .role = DPQ_ROLE_SERVER };
	struct dpq_conn_init in = { 0 };
	struct dpq_tparams tp;
	struct dpq_conn *c;
	uint8_t blob[512], *e;

	in.conf = &conf;
	in.crypto = cc;
	in.hs_ops = &hs_ops;
	in.app = &app;
	in.scid = scid;
	in.dcid = dcid;
	in.peer_scid = cscid;
	in.after_retry = validated;
	in.odcid = dcid;
	in.now = 1000000;
	FUZZ_CHECK(dpq_conn_create(&in, &c) == 0);
	FUZZ_CHECK(dpq_conn_hs_secret(c, DPQ_EPOCH_HANDSHAKE, false,
			DPQ_TLS_AES_128_GCM_SHA256, sec_hs_c, 32) == 0);
	FUZZ_CHECK(dpq_conn_hs_secret(c, DPQ_EPOCH_HANDSHAKE, true,
			DPQ_TLS_AES_128_GCM_SHA256, sec_hs_s, 32) == 0);
	if (!complete)
		return c;
	FUZZ_CHECK(dpq_conn_hs_secret(c, DPQ_EPOCH_1RTT, false,
			DPQ_TLS_AES_128_GCM_SHA256, sec_app_c, 32) == 0);
	FUZZ_CHECK(dpq_conn_hs_secret(c, DPQ_EPOCH_1RTT, true,
			DPQ_TLS_AES_128_GCM_SHA256, sec_app_s, 32) == 0);
	dpq_tparams_init_defaults(&tp);
	tp.initial_scid = cscid;
	tp.present |= DPQ_TP_BIT(DPQ_TP_INITIAL_SCID);
	tp.initial_max_data = 1 << 20;
	tp.initial_max_stream_data_bidi_local = 1 << 18;
	tp.initial_max_stream_data_bidi_remote = 1 << 18;
	tp.initial_max_streams_bidi = 16;
	tp.present |= DPQ_TP_BIT(DPQ_TP_INITIAL_MAX_DATA) |
		DPQ_TP_BIT(DPQ_TP_INITIAL_MAX_STREAM_DATA_BIDI_LOCAL) |
		DPQ_TP_BIT(DPQ_TP_INITIAL_MAX_STREAM_DATA_BIDI_REMOTE) |
		DPQ_TP_BIT(DPQ_TP_INITIAL_MAX_STREAMS_BIDI);
	e = dpq_tparams_encode(blob, blob + sizeof(blob), DPQ_ROLE_CLIENT, &tp);
	FUZZ_CHECK(e != NULL);
	FUZZ_CHECK(dpq_conn_hs_peer_tparams(c, blob, (size_t)(e - blob)) == 0);
	dpq_conn_hs_complete(c, "hq-interop");
	FUZZ_CHECK(dpq_conn_state(c) == DPQ_CONN_ESTABLISHED);
	return c;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const enum dpq_pkt_type types[4] = { DPQ_PKT_INITIAL,
		DPQ_PKT_HANDSHAKE, DPQ_PKT_1RTT, DPQ_PKT_1RTT };
	struct fuzz_in in = { data, data + size };
	uint64_t pn[3] = { 0, 0, 0 }, now = 1000000, rx = 0, tx = 0;
	uint8_t mode = fuzz_u8(&in), dg[1500], out[1500];
	size_t off = 0;
	struct dpq_conn *c = server(mode & 1, mode & 2);
	enum dpq_conn_state st = dpq_conn_state(c);
	bool validated = (mode & 2) != 0;

	while (fuzz_left(&in) > 0) {
		uint8_t kind = fuzz_u8(&in), step = fuzz_u8(&in);
		size_t want = fuzz_u16(&in) % 1200, n;
		const uint8_t *frames = fuzz_bytes(&in, want, &n);
		enum dpq_pkt_type t = types[kind & 3];
		struct peer_pkt pk = { 0 };
		unsigned int sp = t == DPQ_PKT_INITIAL ? 0 :
			t == DPQ_PKT_HANDSHAKE ? 1 : 2;
		ssize_t len;
		int guard;

		now += (uint64_t)step * 1000;
		pk.type = t;
		pk.dcid = t == DPQ_PKT_INITIAL ? &dcid : &scid;
		pk.scid = &cscid;
		pk.pn = (kind & 4) && pn[sp] > 0 ? pn[sp] - 1 : pn[sp]++;
		pk.key_phase = (kind & 0x10) != 0;
		pk.frames = frames;
		pk.frames_len = n;
		/* Initials fill a datagram (RFC 9000 §14.1). */
		pk.pad_to = t == DPQ_PKT_INITIAL ? 1200 : 0;
		len = peer_seal(cc, t == DPQ_PKT_INITIAL ? k_init :
				t == DPQ_PKT_HANDSHAKE ? k_hs : k_app, &pk,
				dg + off, sizeof(dg) - off);
		if (len < 0)
			continue;
		off += (size_t)len;
		if ((kind & 8) && t != DPQ_PKT_1RTT && fuzz_left(&in) > 0 &&
		    off < 1400)
			continue;	/* coalesce the next packet behind */
		rx += off;
		if (t == DPQ_PKT_HANDSHAKE)
			validated = true;	/* §8.1: proves the address */
		dpq_conn_recv(c, dg, off, NULL, now);
		off = 0;
		if (now >= dpq_conn_next_timeout(c))
			dpq_conn_on_timeout(c, now);
		dpq_conn_poll(c, now);
		for (guard = 0; guard < 32; guard++) {
			ssize_t s = dpq_conn_send(c, out, sizeof(out), NULL,
					now);

			if (s <= 0)
				break;
			tx += (uint64_t)s;
		}
		if (!validated)
			FUZZ_CHECK(tx <= 3 * rx);
		/* States only move forward (RFC 9000 §10). */
		FUZZ_CHECK(dpq_conn_state(c) >= st);
		st = dpq_conn_state(c);
	}
	dpq_conn_destroy(c);
	return 0;
}
