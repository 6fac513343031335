/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_seeds DIR: write seed inputs for every fuzz target into
 * DIR/<target>/, made with the project's own encoders (so they follow the
 * wire format the targets parse), the RFC 9001 Appendix A connection IDs
 * and Retry vector, and a real TLS handshake run in memory (its
 * ClientHello and the server's flight). Each target's input format is
 * described at the top of tests/fuzz/fuzz_<target>.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "control/tls/tls.h"
#include "dataplane/engine/frame.h"
#include "dataplane/engine/packet.h"
#include "dataplane/engine/tparams.h"
#include "drivers/dpdk/netproto.h"

static const char *root;
static unsigned int written;

static void
seed(const char *target, const char *name, const void *p, size_t len)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, target);
	if (mkdir(path, 0755) != 0 && errno != EEXIST) {
		perror(path);
		exit(1);
	}
	snprintf(path, sizeof(path), "%s/%s/%s", root, target, name);
	f = fopen(path, "wb");
	if (f == NULL || fwrite(p, 1, len, f) != len || fclose(f) != 0) {
		perror(path);
		exit(1);
	}
	written++;
}

/* ---- frames ---------------------------------------------------------------- */

/* One of every frame type, in a payload; returns its length. */
static size_t
all_frames(uint8_t *buf, size_t cap, bool with_ack)
{
	static const uint8_t data[] = "GET /index.html\r\n";
	static const uint8_t cid[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	static const uint8_t token[16] = { 9, 9, 9 };
	struct dpq_ack_range r[2] = { { 10, 20 }, { 0, 5 } };
	uint8_t *p = buf, *end = buf + cap;
	struct dpq_frame f;

	if (with_ack)
		p = dpq_frame_encode_ack(p, end, r, 2, 100, NULL);
	memset(&f, 0, sizeof(f));
	f.type = DPQ_FT_PING;
	p = dpq_frame_encode(p, end, &f);
	f.type = DPQ_FT_CRYPTO;
	f.crypto.offset = 0;
	f.crypto.len = 4;
	f.crypto.data = data;
	p = dpq_frame_encode(p, end, &f);
	memset(&f, 0, sizeof(f));
	f.type = DPQ_FT_STREAM | 0x02 | 0x01;	/* LEN, FIN */
	f.stream.stream_id = 0;
	f.stream.len = sizeof(data) - 1;
	f.stream.data = data;
	f.stream.fin = true;
	p = dpq_frame_encode(p, end, &f);
	memset(&f, 0, sizeof(f));
	f.type = DPQ_FT_STREAM | 0x04 | 0x02;	/* OFF, LEN */
	f.stream.stream_id = 4;
	f.stream.offset = 100;
	f.stream.len = 4;
	f.stream.data = data;
	p = dpq_frame_encode(p, end, &f);
	f.type = DPQ_FT_MAX_DATA;
	f.max_data.max = 1 << 22;
	p = dpq_frame_encode(p, end, &f);
	f.type = DPQ_FT_MAX_STREAM_DATA;
	f.max_stream_data.stream_id = 1;
	f.max_stream_data.max = 1 << 20;
	p = dpq_frame_encode(p, end, &f);
	f.type = DPQ_FT_MAX_STREAMS_BIDI;
	f.max_streams.max = 200;
	p = dpq_frame_encode(p, end, &f);
	f.type = DPQ_FT_DATA_BLOCKED;
	f.data_blocked.limit = 1000;
	p = dpq_frame_encode(p, end, &f);
	f.type = DPQ_FT_STREAM_DATA_BLOCKED;
	f.stream_data_blocked.stream_id = 0;
	f.stream_data_blocked.limit = 10;
	p = dpq_frame_encode(p, end, &f);
	f.type = DPQ_FT_STREAMS_BLOCKED_UNI;
	f.streams_blocked.limit = 3;
	p = dpq_frame_encode(p, end, &f);
	f.type = DPQ_FT_NEW_CONNECTION_ID;
	f.new_cid.seq = 1;
	f.new_cid.retire_prior_to = 0;
	f.new_cid.cid_len = 8;
	f.new_cid.cid = cid;
	f.new_cid.reset_token = token;
	p = dpq_frame_encode(p, end, &f);
	f.type = DPQ_FT_RETIRE_CONNECTION_ID;
	f.retire_cid.seq = 0;
	p = dpq_frame_encode(p, end, &f);
	f.type = DPQ_FT_PATH_CHALLENGE;
	memcpy(f.path.data, cid, 8);
	p = dpq_frame_encode(p, end, &f);
	f.type = DPQ_FT_RESET_STREAM;
	f.reset_stream.stream_id = 4;
	f.reset_stream.app_error = 7;
	f.reset_stream.final_size = 104;
	p = dpq_frame_encode(p, end, &f);
	f.type = DPQ_FT_STOP_SENDING;
	f.stop_sending.stream_id = 0;
	f.stop_sending.app_error = 8;
	p = dpq_frame_encode(p, end, &f);
	f.type = DPQ_FT_NEW_TOKEN;
	f.new_token.len = sizeof(token);
	f.new_token.token = token;
	p = dpq_frame_encode(p, end, &f);
	memset(&f, 0, sizeof(f));
	f.type = DPQ_FT_CONNECTION_CLOSE;
	f.close.error_code = 0x0a;
	f.close.frame_type = 0x08;
	f.close.reason = data;
	f.close.reason_len = 3;
	p = dpq_frame_encode(p, end, &f);
	if (p == NULL) {
		fprintf(stderr, "fuzz_seeds: frames do not fit\n");
		exit(1);
	}
	return (size_t)(p - buf);
}

static void
seeds_frame(void)
{
	uint8_t b[2048];
	struct dpq_frame f = { .type = DPQ_FT_HANDSHAKE_DONE };
	uint8_t *p;

	seed("frame", "all", b, all_frames(b, sizeof(b), true));
	p = dpq_frame_encode(b, b + sizeof(b), &f);
	p = dpq_frame_encode_padding(p, b + sizeof(b), 20);
	seed("frame", "done-padding", b, (size_t)(p - b));
}

/* ---- packets ---------------------------------------------------------------- */

/* RFC 9001 Appendix A: the client's first DCID, the server's SCID, and
 * the A.4 Retry packet. */
static const uint8_t rfc_dcid[8] = { 0x83, 0x94, 0xc8, 0xf0, 0x3e, 0x51,
	0x57, 0x08 };
static const uint8_t rfc_scid[8] = { 0xf0, 0x67, 0xa5, 0x50, 0x2a, 0x42,
	0x62, 0xb5 };
static const uint8_t rfc_retry[] = {
	0xff, 0x00, 0x00, 0x00, 0x01, 0x00, 0x08, 0xf0, 0x67, 0xa5, 0x50,
	0x2a, 0x42, 0x62, 0xb5, 0x74, 0x6f, 0x6b, 0x65, 0x6e, 0x04, 0xa2,
	0x65, 0xba, 0x2e, 0xff, 0x4d, 0x82, 0x90, 0x58, 0xfb, 0x3f, 0x0f,
	0x24, 0x96, 0xba,
};

static size_t
long_pkt(uint8_t *buf, size_t cap, enum dpq_pkt_type t, size_t payload)
{
	struct dpq_pkt_long_desc d = { 0 };
	static const uint8_t tok[4] = { 't', 'o', 'k', '!' };
	uint8_t *pl, *lenf;

	d.type = t;
	d.version = DPQ_VERSION_1;
	d.dcid = rfc_dcid;
	d.dcid_len = 8;
	d.scid = rfc_scid;
	d.scid_len = 8;
	d.token = t == DPQ_PKT_INITIAL ? tok : NULL;
	d.token_len = t == DPQ_PKT_INITIAL ? sizeof(tok) : 0;
	d.pn = 2;
	d.pn_len = 2;
	pl = dpq_pkt_write_long(buf, buf + cap, &d, &lenf);
	memset(pl, 0x42, payload);
	dpq_pkt_patch_length(lenf, payload + 2);
	return (size_t)(pl - buf) + payload;
}

static void
seeds_packet(void)
{
	static const uint32_t versions[2] = { DPQ_VERSION_1, 0x1a2a3a4a };
	uint8_t b[4096];
	size_t n;
	uint8_t *p;

	b[0] = 1;	/* short headers: 8-byte DCID */
	n = 1 + long_pkt(b + 1, sizeof(b) - 1, DPQ_PKT_INITIAL, 1160);
	seed("packet", "initial", b, n);
	n += long_pkt(b + n, sizeof(b) - n, DPQ_PKT_HANDSHAKE, 300);
	p = dpq_pkt_write_short(b + n, b + sizeof(b), rfc_scid, 8, false,
			false, 7, 2);
	memset(p, 0x17, 40);
	n = (size_t)(p - b) + 40;
	seed("packet", "coalesced", b, n);
	n = 1 + long_pkt(b + 1, sizeof(b) - 1, DPQ_PKT_0RTT, 100);
	seed("packet", "0rtt", b, n);
	p = dpq_pkt_write_vn(b + 1, b + sizeof(b), 0x2a, rfc_scid, 8,
			rfc_dcid, 8, versions, 2);
	seed("packet", "vn", b, (size_t)(p - b));
	memcpy(b + 1, rfc_retry, sizeof(rfc_retry));
	seed("packet", "rfc9001-a4-retry", b, 1 + sizeof(rfc_retry));
	/* Packet numbers: pn and largest acknowledged after a short packet. */
	memset(b + 1, 0, 16);
	b[8] = 0x10;
	b[16] = 0x01;
	seed("packet", "pn", b, 17);
}

/* ---- transport parameters ------------------------------------------------ */

static void
seeds_tparams(void)
{
	struct dpq_tparams tp;
	uint8_t b[DPQ_TPARAMS_MAX_LEN + 1], *e;

	dpq_tparams_init_defaults(&tp);
	tp.initial_scid.len = 8;
	memcpy(tp.initial_scid.bytes, rfc_scid, 8);
	tp.max_idle_timeout = 30000;
	tp.initial_max_data = 1 << 20;
	tp.initial_max_stream_data_bidi_local = 1 << 18;
	tp.initial_max_stream_data_bidi_remote = 1 << 18;
	tp.initial_max_stream_data_uni = 1 << 18;
	tp.initial_max_streams_bidi = 100;
	tp.initial_max_streams_uni = 3;
	tp.max_udp_payload_size = 1452;
	tp.active_connection_id_limit = 4;
	tp.present |= DPQ_TP_BIT(DPQ_TP_INITIAL_SCID) |
		DPQ_TP_BIT(DPQ_TP_MAX_IDLE_TIMEOUT) |
		DPQ_TP_BIT(DPQ_TP_INITIAL_MAX_DATA) |
		DPQ_TP_BIT(DPQ_TP_INITIAL_MAX_STREAM_DATA_BIDI_LOCAL) |
		DPQ_TP_BIT(DPQ_TP_INITIAL_MAX_STREAM_DATA_BIDI_REMOTE) |
		DPQ_TP_BIT(DPQ_TP_INITIAL_MAX_STREAM_DATA_UNI) |
		DPQ_TP_BIT(DPQ_TP_INITIAL_MAX_STREAMS_BIDI) |
		DPQ_TP_BIT(DPQ_TP_INITIAL_MAX_STREAMS_UNI) |
		DPQ_TP_BIT(DPQ_TP_MAX_UDP_PAYLOAD_SIZE) |
		DPQ_TP_BIT(DPQ_TP_ACTIVE_CONNECTION_ID_LIMIT);
	b[0] = 0;	/* sent by a client */
	e = dpq_tparams_encode(b + 1, b + sizeof(b), DPQ_ROLE_CLIENT, &tp);
	seed("tparams", "client", b, (size_t)(e - b));
	tp.original_dcid.len = 8;
	memcpy(tp.original_dcid.bytes, rfc_dcid, 8);
	memset(tp.stateless_reset_token, 0x5a, 16);
	tp.present |= DPQ_TP_BIT(DPQ_TP_ORIGINAL_DCID) |
		DPQ_TP_BIT(DPQ_TP_STATELESS_RESET_TOKEN);
	b[0] = 1;	/* sent by a server */
	e = dpq_tparams_encode(b + 1, b + sizeof(b), DPQ_ROLE_SERVER, &tp);
	seed("tparams", "server", b, (size_t)(e - b));
}

/* ---- connection records ------------------------------------------------- */

static size_t
record(uint8_t *p, uint8_t kind, uint8_t step, const uint8_t *frames,
		size_t len)
{
	p[0] = kind;
	p[1] = step;
	p[2] = (uint8_t)(len >> 8);
	p[3] = (uint8_t)len;
	memcpy(p + 4, frames, len);
	return 4 + len;
}

static void
seeds_conn(void)
{
	static const uint8_t ping[1] = { 0x01 };
	uint8_t b[8192], f[2048];
	size_t n, fl;

	/* Established: every frame type in one 1-RTT packet, then PINGs. */
	b[0] = 1;
	fl = all_frames(f, sizeof(f), false);
	n = 1 + record(b + 1, 2, 1, f, fl);
	n += record(b + n, 2, 30, ping, 1);
	seed("conn", "established-all", b, n);
	/* Handshaking: Initial and Handshake CRYPTO, coalesced. */
	b[0] = 0;
	fl = 0;
	f[fl++] = 0x06;		/* CRYPTO offset 0 length 4 */
	f[fl++] = 0x00;
	f[fl++] = 0x04;
	memcpy(f + fl, "\x01\x00\x00\x00", 4);
	fl += 4;
	n = 1 + record(b + 1, 8, 0, f, fl);
	n += record(b + n, 1, 1, f, fl);
	seed("conn", "handshaking", b, n);
}

/* ---- listener records ---------------------------------------------------- */

static void
seeds_listener(void)
{
	uint8_t b[4096];
	size_t n = 0, l;

	/* A raw Initial of 1200 bytes from host 1. */
	l = long_pkt(b + 5, sizeof(b) - 5, DPQ_PKT_INITIAL, 1160);
	b[0] = 0;
	b[1] = 0;
	b[2] = 100;
	b[3] = (uint8_t)(l >> 8);
	b[4] = (uint8_t)l;
	n = 5 + l;
	/* An Initial with a mutated Retry token, then the real one. */
	memcpy(b + n, "\x09\x00\x10\x00\x02\x05\x80", 7);
	n += 7;
	memcpy(b + n, "\x0c\x00\x10\x00\x00", 5);
	n += 5;
	/* A short header for nobody (stateless reset). */
	b[n++] = 1;
	b[n++] = 0;
	b[n++] = 1;
	b[n++] = 0;
	b[n++] = 40;
	memset(b + n, 0x41, 40);
	n += 40;
	seed("listener", "mix", b, n);
}

/* ---- receive buffer ------------------------------------------------------ */

static void
seeds_recvbuf(void)
{
	/* limit; then op, off16, len16: in order, a hole, read, FIN, reset */
	static const uint8_t s[] = {
		0x40, 0x00,
		0x00, 0x00, 0x00, 0x01, 0x00,
		0x01, 0x02, 0x00, 0x01, 0x00,
		0x02, 0x00, 0x00, 0x02, 0x00,
		0x80, 0x01, 0x00, 0x01, 0x00,
		0x02, 0x00, 0x00, 0x04, 0x00,
		0x03, 0x03, 0x00, 0x00, 0x00,
	};

	seed("recvbuf", "ops", s, sizeof(s));
}

/* ---- Ethernet frames ----------------------------------------------------- */

static void
seeds_netproto(void)
{
	static const uint8_t our_mac[6] = { 0x02, 0, 0, 0, 0, 0x02 };
	static const uint8_t peer_mac[6] = { 0x02, 0, 0, 0, 0, 0x01 };
	static const uint8_t ip4[4] = { 198, 18, 0, 2 }, peer4[4] = { 198, 18,
		0, 1 };
	static const uint8_t ip6[16] = { 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0,
		0, 0, 0, 0, 0, 0, 0, 2 };
	static const uint8_t peer6[16] = { 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0,
		0, 0, 0, 0, 0, 0, 0, 1 };
	struct dpq_np_udp_args a = { 0 };
	uint8_t b[2048];
	size_t h, n;

	memcpy(a.src_mac, peer_mac, 6);
	memcpy(a.dst_mac, our_mac, 6);
	a.sport = 50000;
	a.dport = 4433;
	a.family = AF_INET;
	a.src_ip = peer4;
	a.dst_ip = ip4;
	h = dpq_np_udp_hdr_len(AF_INET);
	memset(b + 1 + h, 0xc3, 100);
	dpq_np_write_udp(b + 1, &a, 100, 0);
	b[0] = 0;
	seed("netproto", "udp4", b, 1 + h + 100);
	a.family = AF_INET6;
	a.src_ip = peer6;
	a.dst_ip = ip6;
	h = dpq_np_udp_hdr_len(AF_INET6);
	memset(b + 1 + h, 0xc3, 100);
	dpq_np_write_udp(b + 1, &a, 100, 0);
	b[0] = 1;
	seed("netproto", "udp6", b, 1 + h + 100);
	n = dpq_np_build_arp(b + 1, sizeof(b) - 1, DPQ_NP_ARP_REQUEST,
			dpq_np_bcast_mac, peer_mac, peer4, NULL, ip4);
	b[0] = 0;
	seed("netproto", "arp", b, 1 + n);
	n = dpq_np_build_ns(b + 1, sizeof(b) - 1, peer_mac, peer6, ip6);
	b[0] = 1;
	seed("netproto", "ns", b, 1 + n);
	n = dpq_np_build_echo_reply(b + 1, sizeof(b) - 1, AF_INET, peer_mac,
			our_mac, peer4, ip4, (const uint8_t *)"\x08\0\0\0\0\1\0\1",
			8);
	b[0] = 0;
	seed("netproto", "echo4", b, 1 + n);
}

/* ---- control lines, hq requests ------------------------------------------ */

static void
seeds_text(void)
{
	static const char *const ctl[] = {
		"{\"cmd\":\"stats\"}",
		"{\"cmd\":\"ping\",\"id\":7}",
		("{\"cmd\":\"close\",\"conn\":\"0:12:1\",\"code\":256,"
			"\"reason\":\"bye \\u00e9\\ud83d\\ude00\"}"),
		"[1,-2,true,false,null,{\"a\":[\"x\",{}]},18446744073709551615]",
	};
	static const char *const hq[] = {
		"GET /index.html",
		"GET /a/b%20c/d.bin",
		"GET /%2e%2e/etc/passwd",
		"GET /x//y",
	};
	char name[16];
	unsigned int i;

	for (i = 0; i < sizeof(ctl) / sizeof(ctl[0]); i++) {
		snprintf(name, sizeof(name), "line%u", i);
		seed("ctl", name, ctl[i], strlen(ctl[i]));
	}
	for (i = 0; i < sizeof(hq) / sizeof(hq[0]); i++) {
		snprintf(name, sizeof(name), "req%u", i);
		seed("hq", name, hq[i], strlen(hq[i]));
	}
}

/* ---- a TLS handshake in memory ------------------------------------------- */

struct hs_side {
	struct dpq_tls *tls;
	uint8_t out[DPQ_TLS_LEVELS][16384];
	size_t out_len[DPQ_TLS_LEVELS];
};

static int
hs_secret(void *arg, enum dpq_tls_level level, bool write, uint16_t suite,
		const uint8_t *secret, size_t len)
{
	(void)arg; (void)level; (void)write; (void)suite; (void)secret;
	(void)len;
	return 0;
}

static int
hs_send(void *arg, enum dpq_tls_level level, const uint8_t *data, size_t len)
{
	struct hs_side *s = arg;

	if (s->out_len[level] + len > sizeof(s->out[level]))
		return -1;
	memcpy(s->out[level] + s->out_len[level], data, len);
	s->out_len[level] += len;
	return 0;
}

static uint64_t
hs_tparams(void *arg, const uint8_t *data, size_t len)
{
	(void)arg; (void)data; (void)len;
	return 0;
}

static const struct dpq_tls_callbacks hs_cb = { hs_secret, hs_send,
	hs_tparams };

static void
quiet(void *arg, const char *msg)
{
	(void)arg;
	(void)msg;
}

static void
seeds_tls(void)
{
	static struct hs_side c, s;
	struct dpq_tls_ctx_conf conf = { 0 };
	struct dpq_tls_ctx *cctx, *sctx;
	uint8_t tp[64] = { 0x0f, 0x08, 1, 2, 3, 4, 5, 6, 7, 8 };
	static uint8_t b[40000];
	size_t n;

	conf.alpn[0] = "hq-interop";
	conf.alpn_count = 1;
	conf.self_signed_name = "dpquic.fuzz";
	conf.server_name = "dpquic.fuzz";
	conf.log = quiet;
	conf.role = DPQ_TLS_SERVER;
	if (dpq_tls_ctx_create(&conf, &sctx) != 0)
		exit(1);
	conf.role = DPQ_TLS_CLIENT;
	if (dpq_tls_ctx_create(&conf, &cctx) != 0)
		exit(1);
	if (dpq_tls_new(cctx, &hs_cb, &c, tp, 10, &c.tls) != 0 ||
	    dpq_tls_new(sctx, &hs_cb, &s, tp, 10, &s.tls) != 0)
		exit(1);
	/* ClientHello to the server, its flight to the client. */
	dpq_tls_recv(s.tls, DPQ_TLS_LEVEL_INITIAL, c.out[0], c.out_len[0]);
	b[0] = 0;	/* we are the server */
	b[1] = 0xff;
	memcpy(b + 2, c.out[0], c.out_len[0]);
	seed("tls", "client-hello", b, 2 + c.out_len[0]);
	b[0] = 1;	/* we are a client: ServerHello, then the rest */
	b[1] = (uint8_t)(s.out_len[0] < 255 ? s.out_len[0] : 255);
	n = 2;
	memcpy(b + n, s.out[0], s.out_len[0]);
	n += s.out_len[0];
	memcpy(b + n, s.out[2], s.out_len[2]);
	n += s.out_len[2];
	seed("tls", "server-flight", b, n);
	dpq_tls_free(c.tls);
	dpq_tls_free(s.tls);
	dpq_tls_ctx_destroy(cctx);
	dpq_tls_ctx_destroy(sctx);
}

int
main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: fuzz_seeds DIR\n");
		return 2;
	}
	root = argv[1];
	if (mkdir(root, 0755) != 0 && errno != EEXIST) {
		perror(root);
		return 1;
	}
	seeds_frame();
	seeds_packet();
	seeds_tparams();
	seeds_conn();
	seeds_listener();
	seeds_recvbuf();
	seeds_netproto();
	seeds_text();
	seeds_tls();
	printf("fuzz_seeds: %u seeds in %s\n", written, root);
	return 0;
}
