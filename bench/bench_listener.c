/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpq-bench-listener: what one Initial from a spoofed source costs the
 * server's listener (dataplane/server/listener.c), per outcome, in one
 * run on one core (issue 7 §3: an Initial flood):
 *
 *   drop      an Initial in a datagram under 1200 bytes: parsed and
 *             dropped (RFC 9000 §14.1), the baseline
 *   retry     a 1200-byte Initial answered with a Retry (as under a
 *             flood: new CID, AES-GCM sealed token, integrity tag; reply
 *             rate limit off so every one is answered)
 *   limited   the same with the default Retry reply rate (the bucket
 *             refuses most: what a flood beyond it costs)
 *   badtoken  an Initial with a forged Retry token: the token fails to
 *             open and the answer is an INVALID_TOKEN close sealed with
 *             Initial keys derived for it (reply rate limit off)
 *
 * Each mode runs over N distinct datagrams (random DCIDs and source
 * addresses) built beforehand; the clock is read only around the loop.
 * Prints ns per datagram, datagrams/s and the ratio to "drop", and a
 * final "RESULT ..." line. No EAL, no driver: the shard's receive path
 * and the NIC are not in these figures (see README "Under attack").
 *
 *   dpq-bench-listener [-n N] [-r ROUNDS]
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "dataplane/crypto/crypto.h"
#include "dataplane/engine/packet.h"
#include "dataplane/server/listener.h"
#include "dataplane/server/token.h"

enum mode { M_DROP, M_RETRY, M_LIMITED, M_BADTOKEN, M_COUNT };

static const char *const mode_name[M_COUNT] = {
	"drop", "retry", "limited", "badtoken",
};

struct dgram {
	uint8_t b[1200];
	uint16_t len;
	struct dpq_netaddr peer;
};

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void
fill(uint8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)rand();
}

/* An Initial of len bytes (header, then payload bytes standing for a
 * ClientHello: the listener does not decrypt before it answers). */
static int
build(struct dgram *d, size_t len, const uint8_t *tok, size_t tok_len)
{
	struct dpq_pkt_long_desc ld;
	uint8_t dcid[8], scid[8], *pl, *lenf;

	fill(dcid, sizeof(dcid));
	fill(scid, sizeof(scid));
	memset(&ld, 0, sizeof(ld));
	ld.type = DPQ_PKT_INITIAL;
	ld.version = DPQ_VERSION_1;
	ld.dcid = dcid;
	ld.dcid_len = sizeof(dcid);
	ld.scid = scid;
	ld.scid_len = sizeof(scid);
	ld.token = tok;
	ld.token_len = tok_len;
	ld.pn_len = 4;
	pl = dpq_pkt_write_long(d->b, d->b + len, &ld, &lenf);
	if (pl == NULL || dpq_pkt_patch_length(lenf,
			(uint64_t)(d->b + len - pl) + 4) != 0)
		return -1;
	fill(pl, (size_t)(d->b + len - pl));
	d->len = (uint16_t)len;
	memset(&d->peer, 0, sizeof(d->peer));
	d->peer.family = AF_INET;
	d->peer.ip[0] = 198;
	d->peer.ip[1] = 19;
	fill(&d->peer.ip[2], 2);
	d->peer.port = (uint16_t)(1024 + rand() % 60000);
	return 0;
}

static struct dpq_listener *
listener(struct dpq_crypto *cc, enum mode m)
{
	static const uint8_t tkey[DPQ_TOKEN_KEY_LEN] = { 0x42 };
	struct dpq_listener_cfg cfg;
	struct dpq_listener *l;

	dpq_listener_cfg_default(&cfg);
	cfg.sreset_key_len = 32;
	fill(cfg.sreset_key, 32);
	cfg.retry = DPQ_RETRY_ALWAYS;
	if (m != M_LIMITED)
		cfg.retry_reply_rate = 0;	/* every one answered */
	cfg.reply_rate = UINT32_MAX;
	cfg.reply_burst = UINT32_MAX;
	l = dpq_listener_create(&cfg, cc, &dpq_rand_system, 1);
	if (l == NULL || dpq_listener_set_token_key(l, 1, tkey) != 0) {
		fprintf(stderr, "dpq-bench-listener: listener: %s\n",
			strerror(errno));
		exit(1);
	}
	return l;
}

/* ns per datagram of mode m over n datagrams (best of rounds); *answered:
 * replies of the last round. */
static double
run(struct dpq_crypto *cc, enum mode m, struct dgram *d, unsigned int n,
		unsigned int rounds, unsigned int *answered)
{
	struct dpq_listener_result r;
	double best = 0;
	unsigned int k, i;

	for (k = 0; k < rounds; k++) {
		struct dpq_listener *l = listener(cc, m);
		uint64_t t0, t1, now = 1000000;

		*answered = 0;
		t0 = now_ns();
		for (i = 0; i < n; i++) {
			/* a datagram every 10 us of the listener's clock:
			 * 100,000/s, the reply buckets see a flood */
			now += 10;
			if (dpq_listener_on_datagram(l, d[i].b, d[i].len,
					&d[i].peer, now, &r) ==
					DPQ_LISTEN_REPLY)
				(*answered)++;
		}
		t1 = now_ns();
		dpq_listener_destroy(l);
		if (k == 0 || (double)(t1 - t0) / n < best)
			best = (double)(t1 - t0) / n;
	}
	return best;
}

int
main(int argc, char **argv)
{
	unsigned int n = 100000, rounds = 3, answered, i;
	uint8_t tok[DPQ_TOKEN_MAX_LEN];
	double ns[M_COUNT];
	struct dpq_crypto *cc;
	struct dgram *d;
	int opt;

	while ((opt = getopt(argc, argv, "n:r:h")) != -1) {
		switch (opt) {
		case 'n':
			n = (unsigned int)strtoul(optarg, NULL, 10);
			break;
		case 'r':
			rounds = (unsigned int)strtoul(optarg, NULL, 10);
			break;
		default:
			fprintf(stderr, "usage: dpq-bench-listener [-n N] "
				"[-r ROUNDS]\n");
			return opt == 'h' ? 0 : 2;
		}
	}
	if (n == 0 || rounds == 0) {
		fprintf(stderr, "dpq-bench-listener: -n and -r must be > 0\n");
		return 2;
	}
	cc = dpq_crypto_create();
	d = calloc(n, sizeof(*d));
	if (cc == NULL || d == NULL) {
		fprintf(stderr, "dpq-bench-listener: out of memory\n");
		return 1;
	}
	srand(7);
	printf("%-9s %10s %12s %9s %10s\n", "mode", "ns/dgram", "dgrams/s",
		"vs drop", "answered");
	for (i = 0; i < M_COUNT; i++) {
		unsigned int j;

		for (j = 0; j < n; j++) {
			size_t tl = 0;

			if (i == M_BADTOKEN) {
				/* a Retry token's look, not one we sealed */
				fill(tok, 60);
				tok[0] = (uint8_t)(DPQ_TOKEN_RETRY << 6) |
					(tok[0] & 0x3f);
				tl = 60;
			}
			if (build(&d[j], i == M_DROP ? 1100 : 1200,
					tl ? tok : NULL, tl) != 0) {
				fprintf(stderr, "dpq-bench-listener: build\n");
				return 1;
			}
		}
		/* flags, version, DCID len + 8, SCID len + 8, token len */
		if (i == M_BADTOKEN && dpq_token_peek_type(d[0].b + 24, 60) != DPQ_TOKEN_RETRY) {
			fprintf(stderr, "dpq-bench-listener: the forged "
				"token does not look like a Retry token\n");
			return 1;
		}
		ns[i] = run(cc, (enum mode)i, d, n, rounds, &answered);
		printf("%-9s %10.0f %12.0f %9.2f %10u\n", mode_name[i], ns[i],
			1e9 / ns[i], ns[i] / ns[M_DROP], answered);
	}
	printf("RESULT drop_ns=%.0f retry_ns=%.0f limited_ns=%.0f "
		"badtoken_ns=%.0f retries_per_s=%.0f\n", ns[M_DROP],
		ns[M_RETRY], ns[M_LIMITED], ns[M_BADTOKEN], 1e9 / ns[M_RETRY]);
	free(d);
	dpq_crypto_destroy(cc);
	return 0;
}
