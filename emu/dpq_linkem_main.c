/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpq-linkem: the link emulator in real time. A DPDK program joining two
 * ports (normally net_af_packet on veth ends that lead into two network
 * namespaces) that forwards Ethernet frames between them through the same
 * impairment model as the virtual-time simulator (emu/linkem.c): delay,
 * jitter, bottleneck rate and drop-tail queue, random and burst loss,
 * reordering, duplication, corruption, blackouts. Kernel TCP, kernel-
 * socket QUIC stacks and dpquicd all cross the same emulated path.
 *
 * Frames that are not IPv4 or IPv6 (ARP) pass at once, unimpaired: the
 * experiment is about the transport, not neighbour discovery.
 *
 * One lcore. Time from the TSC. Frames wait in a bounded min-heap keyed by
 * arrival time (full: dropped and counted). When no frame arrived for a
 * while the loop sleeps up to --idle-us between polls instead of spinning,
 * which adds at most that much to a frame's delay; while frames flow it
 * polls without sleeping. At exit (SIGINT, SIGTERM or --duration) it
 * prints per-direction counters and the CPU time it used.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_mbuf.h>

#include "emu/linkem.h"

#define BURST		32
#define RX_DESC		1024
#define TX_DESC		1024
#define HEAP_DEFAULT	16384
#define MBUFS_DEFAULT	49151

/* A frame waiting for its arrival time. */
struct held {
	uint64_t at;		/* ns since start */
	uint64_t seq;
	struct rte_mbuf *m;
};

/* One direction: from port in to port out. */
struct dir {
	const char *name;
	uint16_t in, out;
	struct dpq_linkem em;
	struct held *heap;
	uint32_t n, cap;
	uint64_t seq;
	/* counters beyond the model's */
	uint64_t rx, passed;		/* frames read; non-IP passed */
	uint64_t heap_full, tx_drop, copy_fail, sent;
};

static volatile sig_atomic_t stop;
static bool clock_on_traffic;

static void
on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static bool
before(const struct held *a, const struct held *b)
{
	return a->at < b->at || (a->at == b->at && a->seq < b->seq);
}

static bool
heap_push(struct dir *d, uint64_t at, struct rte_mbuf *m)
{
	struct held h = { at, d->seq++, m };
	uint32_t i;

	if (d->n >= d->cap)
		return false;
	i = d->n++;
	while (i > 0) {
		uint32_t up = (i - 1) / 2;

		if (!before(&h, &d->heap[up]))
			break;
		d->heap[i] = d->heap[up];
		i = up;
	}
	d->heap[i] = h;
	return true;
}

static struct rte_mbuf *
heap_pop(struct dir *d)
{
	struct rte_mbuf *top = d->heap[0].m;
	struct held last = d->heap[--d->n];
	uint32_t i = 0;

	for (;;) {
		uint32_t k = 2 * i + 1;

		if (k >= d->n)
			break;
		if (k + 1 < d->n && before(&d->heap[k + 1], &d->heap[k]))
			k++;
		if (!before(&d->heap[k], &last))
			break;
		d->heap[i] = d->heap[k];
		i = k;
	}
	if (d->n > 0)
		d->heap[i] = last;
	return top;
}

/* Bytes of the frame before its IP payload (corruption goes after). */
static uint32_t
l3_payload_offset(struct rte_mbuf *m, bool *is_ip)
{
	const struct rte_ether_hdr *eh;
	uint32_t off = sizeof(*eh);
	uint16_t type;

	*is_ip = false;
	if (rte_pktmbuf_data_len(m) < sizeof(*eh))
		return 0;
	eh = rte_pktmbuf_mtod(m, const struct rte_ether_hdr *);
	type = rte_be_to_cpu_16(eh->ether_type);
	if (type == RTE_ETHER_TYPE_IPV4) {
		const struct rte_ipv4_hdr *ip;

		if (rte_pktmbuf_data_len(m) < off + sizeof(*ip))
			return 0;
		ip = rte_pktmbuf_mtod_offset(m, const struct rte_ipv4_hdr *,
				off);
		*is_ip = true;
		return off + (uint32_t)((ip->version_ihl & 0x0f) * 4);
	}
	if (type == RTE_ETHER_TYPE_IPV6) {
		*is_ip = true;
		return off + (uint32_t)sizeof(struct rte_ipv6_hdr);
	}
	return 0;
}

static uint64_t
now_ns(uint64_t tsc0, double ns_per_tsc)
{
	return (uint64_t)((double)(rte_rdtsc() - tsc0) * ns_per_tsc);
}

/* Read a burst from d->in; queue what the model lets through. Returns
 * frames read. */
static unsigned int
dir_rx(struct dir *d, struct rte_mempool *mp, uint64_t t)
{
	struct rte_mbuf *pkts[BURST];
	uint16_t n = rte_eth_rx_burst(d->in, 0, pkts, BURST), i;

	d->rx += n;
	for (i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i], *dup = NULL;
		struct dpq_linkem_verdict v;
		uint32_t off, len;
		bool ip;

		off = l3_payload_offset(m, &ip);
		if (!ip) {
			/* ARP and the like: pass now. */
			d->passed++;
			if (!heap_push(d, t, m)) {
				d->heap_full++;
				rte_pktmbuf_free(m);
			}
			continue;
		}
		len = rte_pktmbuf_pkt_len(m);
		if (dpq_linkem_send(&d->em, t, len, &v) == 0) {
			rte_pktmbuf_free(m);
			continue;
		}
		if (v.copies == 2) {
			dup = rte_pktmbuf_copy(m, mp, 0, UINT32_MAX);
			if (dup == NULL)
				d->copy_fail++;
		}
		/* Flip bits only after the IP header, so the frame still
		 * reaches the peer's transport (whose checksum or AEAD then
		 * has to catch it). */
		if (v.flip[0] != 0 && len > off && m->nb_segs == 1)
			dpq_linkem_corrupt(rte_pktmbuf_mtod_offset(m,
					uint8_t *, off), len - off,
					1 + (v.flip[0] - 1) % ((len - off) * 8));
		if (dup != NULL && v.flip[1] != 0 && len > off &&
		    dup->nb_segs == 1)
			dpq_linkem_corrupt(rte_pktmbuf_mtod_offset(dup,
					uint8_t *, off), len - off,
					1 + (v.flip[1] - 1) % ((len - off) * 8));
		if (!heap_push(d, v.at_ns[0], m)) {
			d->heap_full++;
			rte_pktmbuf_free(m);
		}
		if (dup != NULL && !heap_push(d, v.at_ns[1], dup)) {
			d->heap_full++;
			rte_pktmbuf_free(dup);
		}
	}
	return n;
}

/* Send what is due by t. Returns the next due time (UINT64_MAX: none). */
static uint64_t
dir_tx(struct dir *d, uint64_t t)
{
	struct rte_mbuf *pkts[BURST];

	for (;;) {
		uint16_t n = 0, sent;

		while (n < BURST && d->n > 0 && d->heap[0].at <= t)
			pkts[n++] = heap_pop(d);
		if (n == 0)
			break;
		sent = rte_eth_tx_burst(d->out, 0, pkts, n);
		d->sent += sent;
		if (sent < n) {
			d->tx_drop += n - sent;
			rte_pktmbuf_free_bulk(&pkts[sent], n - sent);
		}
	}
	return d->n > 0 ? d->heap[0].at : UINT64_MAX;
}

static int
port_init(uint16_t port, struct rte_mempool *mp)
{
	struct rte_eth_conf conf;
	int rc;

	memset(&conf, 0, sizeof(conf));
	rc = rte_eth_dev_configure(port, 1, 1, &conf);
	if (rc == 0)
		rc = rte_eth_rx_queue_setup(port, 0, RX_DESC,
				rte_eth_dev_socket_id(port), NULL, mp);
	if (rc == 0)
		rc = rte_eth_tx_queue_setup(port, 0, TX_DESC,
				rte_eth_dev_socket_id(port), NULL);
	if (rc == 0)
		rc = rte_eth_dev_start(port);
	if (rc == 0)
		rc = rte_eth_promiscuous_enable(port);
	/* Some virtual devices cannot change promiscuity: not fatal. */
	if (rc == -ENOTSUP)
		rc = 0;
	return rc;
}

static void
print_dir(const struct dir *d)
{
	const struct dpq_linkem_stats *s = &d->em.stats;

	printf("%s: rx %" PRIu64 " (non-IP passed %" PRIu64 "), offered %"
			PRIu64 " (%" PRIu64 " bytes), delivered %" PRIu64
			", sent %" PRIu64 "\n", d->name, d->rx, d->passed,
			s->offered, s->offered_bytes, s->delivered, d->sent);
	printf("%s: dropped queue %" PRIu64 " loss %" PRIu64 " burst %"
			PRIu64 " blackout %" PRIu64 "; duplicated %" PRIu64
			" corrupted %" PRIu64 " reordered %" PRIu64
			"; max backlog %" PRIu64 " bytes\n", d->name,
			s->dropped[DPQ_LINKEM_DROP_QUEUE],
			s->dropped[DPQ_LINKEM_DROP_LOSS],
			s->dropped[DPQ_LINKEM_DROP_BURST],
			s->dropped[DPQ_LINKEM_DROP_BLACKOUT], s->duplicated,
			s->corrupted, s->reordered, s->max_backlog_bytes);
	struct rte_eth_stats es;

	memset(&es, 0, sizeof(es));
	rte_eth_stats_get(d->in, &es);
	printf("%s: emulator drops: delay line full %" PRIu64 ", tx %"
			PRIu64 ", copy %" PRIu64 "; port %u missed %" PRIu64
			" rx errors %" PRIu64 "\n", d->name, d->heap_full,
			d->tx_drop, d->copy_fail, d->in, es.imissed,
			es.ierrors);
}

static void
usage(FILE *f)
{
	fprintf(f,
"usage: dpq-linkem [EAL options] -- [options]\n"
"  joins DPDK ports 0 and 1 through the link emulator\n"
"  --link SPEC      impairments of both directions, e.g.\n"
"                   delay=10ms,rate=1gbit,queue=256kb,loss=1%%\n"
"  --a2b SPEC       port 0 to port 1 only (applied after --link)\n"
"  --b2a SPEC       port 1 to port 0 only\n"
"                   keys: delay jitter rate queue loss burst=RATE/LEN\n"
"                   (LEN datagrams, or a time: burst=2%%/1ms)\n"
"                   reorder reorder_delay dup corrupt\n"
"                   blackout=START+LEN (from program start) seed\n"
"  --duration SEC   stop after SEC seconds (default: until a signal)\n"
"  --idle-us US     longest sleep between polls when idle (default 500;\n"
"                   0: busy poll)\n"
"  --delay-line N   frames each direction may hold (default %d)\n"
"  --ready FILE     write 'ready' to FILE once both ports run\n"
"  --clock-on-traffic  the emulated clock (blackouts) starts at the first\n"
"                   frame, not at program start\n",
		HEAP_DEFAULT);
}

static int
parse_args(int argc, char **argv, struct dpq_linkem_conf *a2b,
		struct dpq_linkem_conf *b2a, double *duration,
		unsigned long *idle_us, unsigned long *cap,
		const char **ready)
{
	static const struct option opts[] = {
		{ "link", required_argument, NULL, 'l' },
		{ "a2b", required_argument, NULL, 'a' },
		{ "b2a", required_argument, NULL, 'b' },
		{ "duration", required_argument, NULL, 'd' },
		{ "idle-us", required_argument, NULL, 'i' },
		{ "delay-line", required_argument, NULL, 'n' },
		{ "ready", required_argument, NULL, 'r' },
		{ "clock-on-traffic", no_argument, NULL, 'T' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char err[160], *end;
	int opt;

	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (opt) {
		case 'l':
		case 'a':
		case 'b':
			if ((opt != 'b' && dpq_linkem_conf_parse(a2b, optarg,
					err, sizeof(err)) != 0) ||
			    (opt != 'a' && dpq_linkem_conf_parse(b2a, optarg,
					err, sizeof(err)) != 0)) {
				fprintf(stderr, "dpq-linkem: %s\n", err);
				return -1;
			}
			break;
		case 'd':
			*duration = strtod(optarg, &end);
			if (*end != '\0' || !(*duration > 0)) {
				fprintf(stderr, "dpq-linkem: --duration wants "
						"seconds > 0\n");
				return -1;
			}
			break;
		case 'i':
		case 'n':
			errno = 0;
			*(opt == 'i' ? idle_us : cap) = strtoul(optarg, &end, 10);
			if (*end != '\0' || errno != 0 ||
			    (opt == 'i' && *idle_us > 100000) ||
			    (opt == 'n' && (*cap < 64 || *cap > 1000000))) {
				fprintf(stderr, "dpq-linkem: --%s out of range "
						"(%s)\n", opt == 'i' ? "idle-us" :
						"delay-line", opt == 'i' ?
						"0..100000" : "64..1000000");
				return -1;
			}
			break;
		case 'r':
			*ready = optarg;
			break;
		case 'T':
			clock_on_traffic = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return -1;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "dpq-linkem: unexpected argument '%s'\n",
				argv[optind]);
		return -1;
	}
	/* Different streams per direction even with one seed given. */
	b2a->seed ^= UINT64_C(0x5bd1e995);
	return 0;
}

int
main(int argc, char **argv)
{
	struct dpq_linkem_conf ca, cb;
	struct dir d[2];
	struct rte_mempool *mp;
	struct rusage ru;
	double duration = 0, ns_per_tsc, wall;
	unsigned long idle_us = 500, cap = HEAP_DEFAULT;
	const char *ready = NULL;
	uint64_t tsc0, t, end_ns, nap = 10000;
	int rc, i;

	rc = rte_eal_init(argc, argv);
	if (rc < 0) {
		fprintf(stderr, "dpq-linkem: EAL init failed (see above)\n");
		return 1;
	}
	argc -= rc;
	argv += rc;
	memset(&ca, 0, sizeof(ca));
	memset(&cb, 0, sizeof(cb));
	if (parse_args(argc, argv, &ca, &cb, &duration, &idle_us, &cap,
			&ready) != 0)
		return 2;
	if (rte_eth_dev_count_avail() < 2) {
		fprintf(stderr, "dpq-linkem: needs two DPDK ports, have %u "
				"(give two --vdev=net_af_packetN,iface=... or "
				"net_tap)\n", rte_eth_dev_count_avail());
		return 2;
	}
	memset(d, 0, sizeof(d));
	d[0].name = "a2b";
	d[0].in = 0;
	d[0].out = 1;
	d[1].name = "b2a";
	d[1].in = 1;
	d[1].out = 0;
	if (dpq_linkem_init(&d[0].em, &ca) != 0 ||
	    dpq_linkem_init(&d[1].em, &cb) != 0) {
		fprintf(stderr, "dpq-linkem: bad link configuration\n");
		return 2;
	}
	for (i = 0; i < 2; i++) {
		d[i].cap = (uint32_t)cap;
		d[i].heap = calloc(cap, sizeof(*d[i].heap));
		if (d[i].heap == NULL)
			return 1;
	}
	mp = rte_pktmbuf_pool_create("linkem", (unsigned int)(2 * cap +
			2 * RX_DESC + 2 * TX_DESC + 4 * BURST) | 1, 256, 0,
			RTE_MBUF_DEFAULT_BUF_SIZE, (int)rte_socket_id());
	if (mp == NULL) {
		fprintf(stderr, "dpq-linkem: mbuf pool: %s (give EAL more "
				"memory with -m, or a smaller --delay-line)\n",
				rte_strerror(rte_errno));
		return 1;
	}
	for (i = 0; i < 2; i++) {
		rc = port_init((uint16_t)i, mp);
		if (rc != 0) {
			fprintf(stderr, "dpq-linkem: port %d: %s\n", i,
					strerror(-rc));
			return 1;
		}
	}
	/* Naps as short as asked: the default 50 us timer slack would add
	 * up to that much to every sleep. */
	prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	ns_per_tsc = 1e9 / (double)rte_get_tsc_hz();
	tsc0 = rte_rdtsc();
	end_ns = duration > 0 ? (uint64_t)(duration * 1e9) : UINT64_MAX;
	printf("dpq-linkem: forwarding port 0 <-> port 1\n");
	fflush(stdout);
	if (ready != NULL) {
		FILE *f = fopen(ready, "w");

		if (f != NULL) {
			fputs("ready\n", f);
			fclose(f);
		}
	}

	while (!stop) {
		uint64_t next, next1, rx;

		/* --clock-on-traffic: time stands at 0 until the first frame
		 * is read (--duration counts from then too). */
		if (clock_on_traffic && d[0].rx + d[1].rx == 0)
			tsc0 = rte_rdtsc();
		t = now_ns(tsc0, ns_per_tsc);
		if (t >= end_ns)
			break;
		rx = dir_rx(&d[0], mp, t) + dir_rx(&d[1], mp, t);
		next = dir_tx(&d[0], t);
		next1 = dir_tx(&d[1], t);
		if (next1 < next)
			next = next1;
		/* Nothing read: sleep until the next frame is due, at most
		 * nap, which doubles from 10 us up to idle_us while nothing
		 * arrives. A frame arriving meanwhile waits in the rx ring
		 * that long (the model sees it as a little jitter). */
		if (rx > 0) {
			nap = 10000;
		} else if (idle_us > 0 && (next == UINT64_MAX || next > t)) {
			uint64_t ns = nap;
			struct timespec ts;

			if (next != UINT64_MAX && next - t < ns)
				ns = next - t;
			ts.tv_sec = 0;
			ts.tv_nsec = (long)ns;
			nanosleep(&ts, NULL);
			if (nap < idle_us * 1000)
				nap = nap * 2 < idle_us * 1000 ? nap * 2 :
					idle_us * 1000;
		}
	}

	wall = (double)now_ns(tsc0, ns_per_tsc) / 1e9;
	for (i = 0; i < 2; i++) {
		while (d[i].n > 0)
			rte_pktmbuf_free(heap_pop(&d[i]));
		print_dir(&d[i]);
	}
	getrusage(RUSAGE_SELF, &ru);
	printf("dpq-linkem: %.1f s, CPU %.2f s user + %.2f s system (%.0f%% "
			"of one core)\n", wall, (double)ru.ru_utime.tv_sec +
			(double)ru.ru_utime.tv_usec / 1e6,
			(double)ru.ru_stime.tv_sec +
			(double)ru.ru_stime.tv_usec / 1e6,
			100.0 * ((double)ru.ru_utime.tv_sec +
			(double)ru.ru_utime.tv_usec / 1e6 +
			(double)ru.ru_stime.tv_sec +
			(double)ru.ru_stime.tv_usec / 1e6) /
			(wall > 0 ? wall : 1));
	for (i = 0; i < 2; i++) {
		rte_eth_dev_stop((uint16_t)i);
		rte_eth_dev_close((uint16_t)i);
		free(d[i].heap);
	}
	rte_eal_cleanup();
	return 0;
}
