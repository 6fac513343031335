/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpq-bench-crypto: throughput of batched QUIC packet protection
 * (dataplane/crypto) per AEAD and packet size, bursts of 32 against one
 * packet per call, seal and open, with the raw ipsec-mb AES-128-GCM
 * direct-API encryption of the same packets measured in the same run as
 * the ceiling (DESIGN §8: figures, never pass/fail). No EAL.
 *
 * Method: a pool of POOL 1-RTT packets (short header, 8-byte DCID, 2-byte
 * pn; 512 KiB of buffers, cache resident as a burst fresh from the NIC
 * would be) is sealed, then opened back (which restores the plaintext, so
 * every open is a real successful one), PASSES times per repetition; each
 * figure is the median over REPS repetitions of ns per packet; warm-up
 * repetitions are discarded.
 * Bytes count the whole protected packet (header + payload + tag).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <intel-ipsec-mb.h>

#include "dataplane/crypto/crypto.h"
#include "dataplane/crypto/pp_key.h"

#define POOL 256
#define PASSES 8	/* pool passes per repetition */
#define BURST 32
#define REPS 101
#define WARMUP 3
#define HDR_LEN 11	/* 0x41, DCID 8, pn 2 */
#define PN_OFFSET 9

struct pool {
	uint8_t *buf[POOL];
	struct dpq_seal_op seal[POOL];
	struct dpq_open_op open[POOL];
	uint16_t len;	/* header + payload (tag excluded) */
};

static double
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double
median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return v[n / 2];
}

static void
die(const char *what)
{
	fprintf(stderr, "dpq-bench-crypto: %s\n", what);
	exit(1);
}

static void
pool_init(struct pool *p, unsigned pkt_size)
{
	unsigned i, j;

	p->len = (uint16_t)(pkt_size - DPQ_CRYPTO_TAG_LEN);
	for (i = 0; i < POOL; i++) {
		p->buf[i] = aligned_alloc(64, 2048);
		if (p->buf[i] == NULL)
			die("out of memory");
		p->buf[i][0] = 0x41;
		for (j = 1; j < p->len; j++)
			p->buf[i][j] = (uint8_t)(i * 31 + j);
	}
}

static void
pool_free(struct pool *p)
{
	unsigned i;

	for (i = 0; i < POOL; i++)
		free(p->buf[i]);
}

/* Point every op at key and give each packet its packet number. */
static void
pool_ops(struct pool *p, const struct dpq_pp_key *key, uint64_t base_pn)
{
	unsigned i;

	for (i = 0; i < POOL; i++) {
		uint64_t pn = base_pn + i;
		uint8_t *b = p->buf[i];

		b[0] = 0x41;
		b[PN_OFFSET] = (uint8_t)(pn >> 8);
		b[PN_OFFSET + 1] = (uint8_t)pn;
		p->seal[i] = (struct dpq_seal_op){
			.key = key, .pkt = b, .len = p->len, .pn = pn,
			.pn_offset = PN_OFFSET, .pn_len = 2,
		};
		p->open[i] = (struct dpq_open_op){
			.key = key, .pkt = b,
			.len = (uint16_t)(p->len + DPQ_CRYPTO_TAG_LEN),
			.pn_offset = PN_OFFSET, .largest_pn = pn - 1,
		};
	}
}

/* ns per packet to seal the pool in bursts of `burst`. */
static double
time_seal(struct dpq_crypto *cc, struct pool *p, unsigned burst)
{
	double t0, t1;
	unsigned i, ok = 0;

	t0 = now_ns();
	for (i = 0; i < POOL; i += burst)
		ok += dpq_crypto_seal_burst(cc, &p->seal[i], (uint16_t)burst);
	t1 = now_ns();
	if (ok != POOL)
		die("seal failed");
	return (t1 - t0) / POOL;
}

/* ns per packet to unprotect + open the pool in bursts of `burst`. */
static double
time_open(struct dpq_crypto *cc, struct pool *p, unsigned burst)
{
	double t0, t1;
	unsigned i, ok = 0;

	t0 = now_ns();
	for (i = 0; i < POOL; i += burst) {
		dpq_crypto_unprotect_hp_burst(cc, &p->open[i], (uint16_t)burst);
		ok += dpq_crypto_open_burst(cc, &p->open[i], (uint16_t)burst);
	}
	t1 = now_ns();
	if (ok != POOL)
		die("open failed");
	return (t1 - t0) / POOL;
}

/* Raw ipsec-mb AES-128-GCM direct API: same buffers, AAD = header. */
static double
time_raw_gcm(IMB_MGR *mgr, const struct gcm_key_data *gk, struct pool *p)
{
	static const uint8_t iv[12] = { 1, 2, 3 };
	struct gcm_context_data ctx;
	double t0, t1;
	unsigned i;

	t0 = now_ns();
	for (i = 0; i < POOL; i++) {
		uint8_t *b = p->buf[i];

		IMB_AES128_GCM_ENC(mgr, gk, &ctx, b + HDR_LEN, b + HDR_LEN,
				p->len - HDR_LEN, iv, b, HDR_LEN, b + p->len,
				DPQ_CRYPTO_TAG_LEN);
	}
	t1 = now_ns();
	return (t1 - t0) / POOL;
}

enum { M_RAW, M_SEAL32, M_SEAL1, M_OPEN32, M_OPEN1, M_NUM };
static const char *const mode_name[M_NUM] = {
	"raw ipsec-mb AES-128-GCM enc", "seal burst 32", "seal 1/call",
	"open burst 32", "open 1/call",
};

static void
print_row(const char *aead, unsigned size, const char *mode, double ns,
		double raw_ns)
{
	printf("%-18s %5u  %-29s %8.1f ns %7.2f Mpps %6.2f GB/s",
			aead, size, mode, ns, 1e3 / ns, size / ns);
	if (raw_ns > 0)
		printf("  %5.1f%% of raw", 100.0 * raw_ns / ns);
	printf("\n");
}

int
main(void)
{
	static const struct {
		enum dpq_aead alg;
		const char *name;
		size_t secret_len;
	} aeads[] = {
		{ DPQ_AEAD_AES_128_GCM, "AES-128-GCM", 32 },
		{ DPQ_AEAD_AES_256_GCM, "AES-256-GCM", 48 },
		{ DPQ_AEAD_CHACHA20_POLY1305, "ChaCha20-Poly1305", 32 },
	};
	static const unsigned sizes[] = { 1350, 64 };
	struct dpq_crypto *cc;
	struct dpq_pp_key *key;
	struct gcm_key_data *raw_key;
	struct pool *p;
	uint8_t secret[48], raw[16];
	double t_start = now_ns();
	unsigned si, ai, i;
	IMB_MGR *raw_mgr;
	IMB_ARCH arch;

	cc = dpq_crypto_create();
	key = aligned_alloc(64, sizeof(*key));
	raw_key = aligned_alloc(64, sizeof(*raw_key));
	p = calloc(1, sizeof(*p));
	raw_mgr = alloc_mb_mgr(0);
	if (cc == NULL || key == NULL || raw_key == NULL || p == NULL ||
			raw_mgr == NULL)
		die("init failed");
	init_mb_mgr_auto(raw_mgr, &arch);
	if (imb_get_errno(raw_mgr) != 0)
		die("ipsec-mb init failed");
	for (i = 0; i < sizeof(secret); i++)
		secret[i] = (uint8_t)(i * 7 + 1);
	for (i = 0; i < sizeof(raw); i++)
		raw[i] = (uint8_t)(i * 13 + 5);
	IMB_AES128_GCM_PRE(raw_mgr, raw, raw_key);

	printf("dpq-bench-crypto: ipsec-mb %s (%s), pool %u packets, "
			"median of %u reps (+%u warm-up), one thread\n",
			imb_get_version_str(), dpq_crypto_arch_name(cc), POOL,
			REPS, WARMUP);
	printf("bytes = whole protected packet; seal = AEAD + header "
			"protection; open = HP removal + pn decode + AEAD open\n\n");

	for (si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
		unsigned size = sizes[si];

		pool_init(p, size);
		for (ai = 0; ai < sizeof(aeads) / sizeof(aeads[0]); ai++) {
			double v[M_NUM][REPS];
			double med[M_NUM];
			int r, m;

			if (dpq_pp_key_init(cc, key, aeads[ai].alg, secret,
					aeads[ai].secret_len) != 0)
				die("key init failed");
			for (r = -WARMUP; r < REPS; r++) {
				double t[M_NUM] = { 0 };
				int k;

				for (k = 0; k < PASSES; k++) {
					t[M_RAW] += time_raw_gcm(raw_mgr,
							raw_key, p) / PASSES;
					pool_ops(p, key, 1000);
					t[M_SEAL32] += time_seal(cc, p, BURST) /
							PASSES;
					t[M_OPEN32] += time_open(cc, p, BURST) /
							PASSES;
					pool_ops(p, key, 5000);
					t[M_SEAL1] += time_seal(cc, p, 1) /
							PASSES;
					t[M_OPEN1] += time_open(cc, p, 1) /
							PASSES;
				}
				if (r >= 0)
					for (m = 0; m < M_NUM; m++)
						v[m][r] = t[m];
			}
			for (m = 0; m < M_NUM; m++)
				med[m] = median(v[m], REPS);
			if (ai == 0)
				print_row("AES-128-GCM", size, mode_name[M_RAW],
						med[M_RAW], 0);
			for (m = M_SEAL32; m < M_NUM; m++)
				print_row(aeads[ai].name, size, mode_name[m],
						med[m], med[M_RAW]);
			if (aeads[ai].alg == DPQ_AEAD_AES_128_GCM)
				printf("  => batched protect / raw AES-128-GCM "
						"at %u B: %.1f%% (target >= 70%% "
						"at 1350 B)\n", size,
						100.0 * med[M_RAW] / med[M_SEAL32]);
			dpq_pp_key_destroy(key);
		}
		pool_free(p);
		printf("\n");
	}
	printf("total run time %.1f s\n", (now_ns() - t_start) / 1e9);
	free_mb_mgr(raw_mgr);
	free(raw_key);
	free(key);
	free(p);
	dpq_crypto_destroy(cc);
	return 0;
}
