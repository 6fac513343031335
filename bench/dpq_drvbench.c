/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpq-drvbench: moves UDP datagrams through dpquic drivers and prints
 * packets/s and Gbit/s (UDP payload) for the sender and the receiver, the
 * loss between them and the drivers' counters.
 *
 *   dpq-drvbench [EAL args --] --mode MODE [options]
 *
 * Modes:
 *   ring         two DPDK drivers on in-process net_ring ports wired back to
 *                back (rte_eth_from_rings); sender and receiver on two lcores
 *                when EAL gave two, else one lcore alternating between them
 *   memif        one DPDK driver on the net_memif port of the EAL args; run
 *                two processes, --role server (receives) and --role client
 *                (sends)
 *   udp          kernel UDP driver on loopback, sender and receiver on two
 *                lcores (or alternating); with --role, one side per process
 *                (--local / --peer)
 *   dpdk-kernel  a DPDK driver on the port the EAL args created (net_tap,
 *                net_af_packet) at --local; with --kernel-side a kernel UDP
 *                driver bound to --peer is the other side, in this process
 *                (DPDK sends, kernel receives; --reverse for the opposite);
 *                without it, --role says what the DPDK side does against an
 *                external peer (e.g. `--mode udp --role ...`)
 *
 * A run has three phases, driven by small control datagrams on the same
 * path: the sender PROBEs until the receiver answers READY (this also
 * resolves ARP / neighbours and waits for memif links), sends DATA for
 * --count datagrams or --seconds, then sends END with its count until the
 * receiver answers END-ACK with what it received. Every wait is bounded:
 * the program always stops by itself. With --window N the receiver also
 * acks its count every N/8 datagrams and the sender keeps at most N in
 * flight, so the rates are what the receiver sustains without overflow;
 * without it the sender runs open loop and the loss shows the overflow.
 * Two-process runs (--role) want each process on its own lcore (-l).
 *
 * Without EAL args it runs with --no-huge --no-shconf --no-pci -m 512
 * --log-level=error. The last line of output is a machine-readable
 * "RESULT key=value ..." line (scripts/demo.sh reads it).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "dpquic/driver.h"

#define BENCH_MAGIC 0x42515044u	/* "DPQB" little-endian */
#define BENCH_HDR_LEN 16
#define BENCH_BURST_MAX 256
#define BENCH_RING_SIZE 4096
#define PROBE_INTERVAL_MS 10
#define END_INTERVAL_MS 20
#define END_WAIT_MS 2000	/* sender: wait this long for END-ACK */
#define LINGER_MS 200		/* receiver: answer repeated ENDs */
#define IDLE_MS 2000		/* receiver: sender gone quiet */
#define BIND_RETRY_MS 100
#define ACK_MS 1		/* receiver: ack new data at least this often */
#define STALL_MS 50		/* sender: no ack progress: count as lost */

enum msg_type {
	MSG_DATA = 1, MSG_PROBE, MSG_READY, MSG_END, MSG_ENDACK,
	MSG_ACK,	/* --window: receiver's count, gives the sender credit */
};

enum mode { MODE_RING, MODE_MEMIF, MODE_UDP, MODE_DPDK_KERNEL };
static const char *const mode_names[] = {
	[MODE_RING] = "ring", [MODE_MEMIF] = "memif", [MODE_UDP] = "udp",
	[MODE_DPDK_KERNEL] = "dpdk-kernel",
};

enum role { ROLE_NONE, ROLE_SEND, ROLE_RECV };
enum phase { PH_WAIT, PH_RUN, PH_END, PH_LINGER, PH_DONE };

static struct {
	enum mode mode;
	enum role role;		/* --role: server receives, client sends */
	uint32_t size;
	uint64_t count;
	double seconds;
	uint16_t burst;
	uint32_t window;	/* datagrams in flight (0: no flow control) */
	double wait;		/* seconds to wait for the peer */
	struct dpq_addr local, peer;
	bool have_local, have_peer;
	bool kernel_side, reverse;
	bool gso, gro;
	int port;		/* DPDK port, -1: first */
} cfg = {
	.size = 1350, .burst = 32, .wait = 10.0, .gso = true, .gro = true,
	.port = -1,
};

static volatile sig_atomic_t force_quit;

/* One end of the transfer: a driver (queue 0) and what it did. */
struct side {
	const char *name;	/* "sender" / "receiver" */
	char what[96];		/* driver description */
	struct dpq_driver *d;
	enum role role;
	enum phase phase;
	struct dpq_addr peer;	/* sender: destination; receiver: learned */
	bool have_peer;
	uint64_t pkts, bytes;	/* DATA sent / received */
	uint64_t t_first, t_last;	/* TSC of first / last DATA */
	uint64_t t_phase, t_next, t_deadline, t_activity;
	uint64_t peer_count;	/* from END (receiver) / END-ACK (sender) */
	bool peer_known;
	uint64_t next_seq, reordered, foreign;
	uint64_t acked;		/* sender: receiver's last count; receiver:
				 * count last acked */
	uint64_t lost_est;	/* sender: in-flight given up on (--window) */
	uint64_t t_ack;
	uint32_t ack_every;	/* receiver: from the sender's PROBE */
	struct rte_mbuf *pend[BENCH_BURST_MAX];
	uint16_t npend, pend_off;
	const char *error;
};

static uint64_t tsc_hz;

static uint64_t
ms_to_tsc(double ms)
{
	return (uint64_t)(ms * (double)tsc_hz / 1000.0);
}

/* ---- datagrams ------------------------------------------------------------ */

static void
hdr_put(uint8_t *p, uint8_t type, uint64_t value)
{
	uint32_t magic = BENCH_MAGIC;

	memcpy(p, &magic, 4);
	p[4] = type;
	p[5] = p[6] = p[7] = 0;
	memcpy(p + 8, &value, 8);
}

static bool
hdr_get(const struct rte_mbuf *m, uint8_t *type, uint64_t *value)
{
	const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *);
	uint32_t magic;

	if (m->data_len < BENCH_HDR_LEN)
		return false;
	memcpy(&magic, p, 4);
	if (magic != BENCH_MAGIC)
		return false;
	*type = p[4];
	memcpy(value, p + 8, 8);
	return true;
}

/* Send one control datagram (best effort: control messages repeat). */
static void
ctl_send(struct side *s, uint8_t type, uint64_t value)
{
	struct rte_mbuf *m;
	uint8_t *p;

	if (!s->have_peer || dpq_driver_alloc_bulk(s->d, 0, &m, 1) != 0)
		return;
	p = (uint8_t *)rte_pktmbuf_append(m, BENCH_HDR_LEN);
	if (p == NULL) {
		dpq_driver_free_bulk(s->d, &m, 1);
		return;
	}
	hdr_put(p, type, value);
	dpq_pkt_meta(m)->peer = s->peer;
	if (dpq_driver_tx_burst(s->d, 0, &m, 1) == 0)
		dpq_driver_free_bulk(s->d, &m, 1);
}

/* ---- the two roles, one step at a time ------------------------------------- */

static void
side_set_phase(struct side *s, enum phase ph, uint64_t now)
{
	s->phase = ph;
	s->t_phase = now;
	s->t_next = now;
}

static void
side_rx(struct side *s, uint64_t now)
{
	struct rte_mbuf *pkts[BENCH_BURST_MAX];
	uint16_t n, i;

	n = dpq_driver_rx_burst(s->d, 0, pkts, cfg.burst);
	for (i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];
		uint8_t type;
		uint64_t v;

		if (!hdr_get(m, &type, &v)) {
			s->foreign++;
			continue;
		}
		if (s->role == ROLE_RECV) {
			s->t_activity = now;
			switch (type) {
			case MSG_DATA:
				if (s->pkts == 0)
					s->t_first = now;
				s->t_last = now;
				s->pkts++;
				s->bytes += m->pkt_len;
				if (v < s->next_seq)
					s->reordered++;
				else
					s->next_seq = v + 1;
				if (s->phase == PH_WAIT)
					side_set_phase(s, PH_RUN, now);
				break;
			case MSG_PROBE:
				/* the PROBE carries the sender's --window */
				s->ack_every = v > 0 ?
					RTE_MAX((uint32_t)(v / 8), 1u) : 0;
				s->peer = dpq_pkt_meta(m)->peer;
				s->have_peer = true;
				ctl_send(s, MSG_READY, 0);
				if (s->phase == PH_WAIT)
					side_set_phase(s, PH_RUN, now);
				break;
			case MSG_END:
				s->peer = dpq_pkt_meta(m)->peer;
				s->have_peer = true;
				s->peer_count = v;
				s->peer_known = true;
				ctl_send(s, MSG_ENDACK, s->pkts);
				/* linger from the last END seen */
				side_set_phase(s, PH_LINGER, now);
				break;
			default:
				s->foreign++;
			}
		} else {
			if (type == MSG_ACK) {
				if (v > s->acked) {
					s->acked = v;
					s->t_ack = now;
				}
			} else if (type == MSG_READY && s->phase == PH_WAIT) {
				side_set_phase(s, PH_RUN, now);
				s->t_ack = now;
				s->t_deadline = cfg.count != 0 ? UINT64_MAX :
					now + ms_to_tsc(cfg.seconds * 1000);
			} else if (type == MSG_ENDACK) {
				s->peer_count = v;
				s->peer_known = true;
				if (s->phase == PH_END)
					side_set_phase(s, PH_DONE, now);
			} else if (type != MSG_READY) {
				s->foreign++;
			}
		}
	}
	if (n > 0)
		dpq_driver_free_bulk(s->d, pkts, n);
	/* sender's --window: credit it every window/8 datagrams, and at
	 * least every ACK_MS while data keeps coming */
	if (s->role == ROLE_RECV && s->ack_every != 0 &&
			s->phase == PH_RUN && s->pkts > s->acked &&
			(s->pkts - s->acked >= s->ack_every ||
			 now - s->t_ack > ms_to_tsc(ACK_MS))) {
		ctl_send(s, MSG_ACK, s->pkts);
		s->acked = s->pkts;
		s->t_ack = now;
	}
}

static void
sender_run(struct side *s, uint64_t now)
{
	uint16_t k, i;

	if (s->npend == 0) {
		uint64_t left = cfg.count != 0 ? cfg.count - s->pkts : UINT64_MAX;
		uint16_t n = cfg.burst;

		if (left == 0 || now >= s->t_deadline) {
			side_set_phase(s, PH_END, now);
			return;
		}
		if (left < n)
			n = (uint16_t)left;
		if (cfg.window != 0 &&
				s->pkts + n > s->acked + s->lost_est + cfg.window) {
			/* no credit: wait for an ack; with none for STALL_MS
			 * what is in flight was lost (overflow) */
			if (now - s->t_ack > ms_to_tsc(STALL_MS)) {
				s->lost_est = s->pkts - RTE_MIN(s->acked,
						s->pkts);
				s->t_ack = now;
			}
			return;
		}
		if (dpq_driver_alloc_bulk(s->d, 0, s->pend, n) != 0)
			return;	/* buffers still in flight: retry */
		for (i = 0; i < n; i++) {
			struct rte_mbuf *m = s->pend[i];
			uint8_t *p = (uint8_t *)rte_pktmbuf_append(m,
					(uint16_t)cfg.size);

			/* payload beyond the header is left as the mbuf had
			 * it: the bench measures the driver, not memset */
			hdr_put(p, MSG_DATA, s->next_seq++);
			dpq_pkt_meta(m)->peer = s->peer;
		}
		s->npend = n;
		s->pend_off = 0;
	} else if (now >= s->t_deadline) {
		/* time is up: what the driver did not take is not sent */
		dpq_driver_free_bulk(s->d, s->pend + s->pend_off,
				s->npend - s->pend_off);
		s->npend = 0;
		side_set_phase(s, PH_END, now);
		return;
	}
	k = dpq_driver_tx_burst(s->d, 0, s->pend + s->pend_off,
			(uint16_t)(s->npend - s->pend_off));
	if (k > 0) {
		if (s->pkts == 0)
			s->t_first = now;
		s->pkts += k;
		s->bytes += (uint64_t)k * cfg.size;
		s->t_last = rte_rdtsc();
		s->pend_off += k;
		if (s->pend_off == s->npend)
			s->npend = 0;
	}
}

static void
sender_step(struct side *s)
{
	uint64_t now = rte_rdtsc();

	side_rx(s, now);
	switch (s->phase) {
	case PH_WAIT:
		if (now - s->t_phase > ms_to_tsc(cfg.wait * 1000)) {
			s->error = "no READY from the receiver";
			side_set_phase(s, PH_DONE, now);
		} else if (now >= s->t_next) {
			ctl_send(s, MSG_PROBE, cfg.window);
			s->t_next = now + ms_to_tsc(PROBE_INTERVAL_MS);
		}
		break;
	case PH_RUN:
		sender_run(s, now);
		break;
	case PH_END:
		if (now - s->t_phase > ms_to_tsc(END_WAIT_MS)) {
			s->error = "no END-ACK from the receiver";
			side_set_phase(s, PH_DONE, now);
		} else if (now >= s->t_next) {
			ctl_send(s, MSG_END, s->pkts);
			s->t_next = now + ms_to_tsc(END_INTERVAL_MS);
		}
		break;
	default:
		break;
	}
}

static void
receiver_step(struct side *s)
{
	uint64_t now = rte_rdtsc();

	side_rx(s, now);
	switch (s->phase) {
	case PH_WAIT:
		if (now - s->t_phase > ms_to_tsc(cfg.wait * 1000)) {
			s->error = "nothing from the sender";
			side_set_phase(s, PH_DONE, now);
		}
		break;
	case PH_RUN:
		if (now - s->t_activity > ms_to_tsc(IDLE_MS)) {
			s->error = "sender went quiet without END";
			side_set_phase(s, PH_DONE, now);
		}
		break;
	case PH_LINGER:
		if (now - s->t_phase > ms_to_tsc(LINGER_MS))
			side_set_phase(s, PH_DONE, now);
		break;
	default:
		break;
	}
}

static void
side_step(struct side *s)
{
	if (s->role == ROLE_SEND)
		sender_step(s);
	else
		receiver_step(s);
}

/* Hard stop for every loop: nothing below can run longer than this. */
static uint64_t hard_deadline;

static bool
side_stop(struct side *s)
{
	if (s->phase == PH_DONE)
		return true;
	if (force_quit || rte_rdtsc() > hard_deadline) {
		if (s->error == NULL)
			s->error = force_quit ? "interrupted" : "time limit";
		s->phase = PH_DONE;
		return true;
	}
	return false;
}

static int
side_loop(void *arg)
{
	struct side *s = arg;

	while (!side_stop(s))
		side_step(s);
	return 0;
}

static void
side_init(struct side *s, enum role role, struct dpq_driver *d,
		const struct dpq_addr *peer, const char *what)
{
	uint64_t now = rte_rdtsc();

	memset(s, 0, sizeof(*s));
	snprintf(s->what, sizeof(s->what), "%s", what);
	s->name = role == ROLE_SEND ? "sender" : "receiver";
	s->role = role;
	s->d = d;
	if (peer != NULL) {
		s->peer = *peer;
		s->have_peer = true;
	}
	s->t_activity = now;
	side_set_phase(s, PH_WAIT, now);
}

static void
side_cleanup(struct side *s)
{
	if (s->npend > s->pend_off)
		dpq_driver_free_bulk(s->d, s->pend + s->pend_off,
				s->npend - s->pend_off);
	s->npend = 0;
}

/* Run the sides given (one or two) until all stop: on separate lcores
 * when EAL has enough, else alternating on this one. */
static void
run_sides(struct side **sides, unsigned int n)
{
	unsigned int worker, i;
	bool launched = false;

	if (n == 2 && rte_lcore_count() >= 2) {
		worker = rte_get_next_lcore(rte_lcore_id(), 1, 0);
		if (worker < RTE_MAX_LCORE &&
				rte_eal_remote_launch(side_loop, sides[1],
				worker) == 0)
			launched = true;
	}
	if (launched) {
		side_loop(sides[0]);
		rte_eal_mp_wait_lcore();
		return;
	}
	for (;;) {
		bool all = true;

		for (i = 0; i < n; i++)
			if (!side_stop(sides[i])) {
				side_step(sides[i]);
				all = false;
			}
		if (all)
			break;
	}
}

/* ---- drivers ---------------------------------------------------------------- */

static struct dpq_driver *
open_dpdk(uint16_t port, const struct dpq_addr *local, char *what,
		size_t wlen)
{
	struct dpq_dpdk_conf c = {
		.port_id = port, .nb_queues = 1, .socket_id = -1,
		.local = *local, .promiscuous = true,
	};
	char name[RTE_ETH_NAME_MAX_LEN], a[64];
	struct dpq_driver *d;

	if (rte_eth_dev_get_name_by_port(port, name) != 0)
		snprintf(name, sizeof(name), "port%u", port);
	d = dpq_driver_dpdk_open(&c);
	if (d == NULL) {
		fprintf(stderr, "dpq-drvbench: DPDK port %u (%s): %s\n", port,
				name, rte_strerror(rte_errno));
		return NULL;
	}
	/* a memif client cannot start before its server listens: retry
	 * for --wait seconds */
	{
		uint64_t end = rte_rdtsc() + ms_to_tsc(cfg.wait * 1000);

		while (dpq_driver_start(d) != 0) {
			if (rte_rdtsc() > end || force_quit) {
				fprintf(stderr, "dpq-drvbench: DPDK port %u: "
						"start failed\n", port);
				dpq_driver_close(d);
				return NULL;
			}
			usleep(BIND_RETRY_MS * 1000);
		}
	}
	snprintf(what, wlen, "dpdk %s %s", name,
			dpq_addr_format(local, a, sizeof(a)));
	return d;
}

/* Kernel UDP driver; retry a not-yet-configured address for up to
 * cfg.wait seconds (the tap demo assigns it after EAL made the iface). */
static struct dpq_driver *
open_kernel(const struct dpq_addr *local, char *what, size_t wlen)
{
	struct dpq_udp_conf c = {
		.local = *local, .nb_queues = 1, .gso = cfg.gso,
		.gro = cfg.gro, .socket_id = -1,
	};
	uint64_t end = rte_rdtsc() + ms_to_tsc(cfg.wait * 1000);
	struct dpq_driver *d;
	struct dpq_addr la;
	char a[64];

	for (;;) {
		d = dpq_driver_udp_open(&c);
		if (d != NULL || errno != EADDRNOTAVAIL ||
				rte_rdtsc() > end || force_quit)
			break;
		usleep(BIND_RETRY_MS * 1000);
	}
	if (d == NULL) {
		fprintf(stderr, "dpq-drvbench: kernel UDP on %s: %s\n",
				dpq_addr_format(local, a, sizeof(a)),
				strerror(errno));
		return NULL;
	}
	dpq_driver_local_addr(d, &la);
	snprintf(what, wlen, "kernel udp %s%s%s",
			dpq_addr_format(&la, a, sizeof(a)),
			cfg.gso ? " gso" : "", cfg.gro ? " gro" : "");
	dpq_driver_start(d);
	return d;
}

static int
first_port(void)
{
	uint16_t p;

	if (cfg.port >= 0)
		return rte_eth_dev_is_valid_port((uint16_t)cfg.port) ?
			cfg.port : -1;
	RTE_ETH_FOREACH_DEV(p)
		return p;
	return -1;
}

/* ---- report ------------------------------------------------------------------- */

static void
print_rate(const struct side *s, double *pps, double *gbps)
{
	double secs = s->t_last > s->t_first ?
		(double)(s->t_last - s->t_first) / (double)tsc_hz : 0;

	*pps = secs > 0 ? (double)s->pkts / secs : 0;
	*gbps = secs > 0 ? (double)s->bytes * 8 / secs / 1e9 : 0;
	printf("  %-8s %-44s %10" PRIu64 " pkts %8.3f Mpps %7.2f Gbit/s"
			" in %.2f s\n", s->name, s->what, s->pkts, *pps / 1e6,
			*gbps, secs);
	if (s->error != NULL)
		printf("  %-8s error: %s\n", s->name, s->error);
}

static void
print_stats(const struct side *s)
{
	struct dpq_driver_stats st;

	dpq_driver_stats(s->d, &st);
	printf("  %-8s driver: rx %" PRIu64 " tx %" PRIu64, s->name,
			st.rx_pkts, st.tx_pkts);
#define NZ(f) do { if (st.f != 0) printf(" " #f " %" PRIu64, st.f); } while (0)
	NZ(rx_dropped); NZ(rx_bad); NZ(tx_dropped); NZ(alloc_fail);
	NZ(arp_rx); NZ(arp_tx); NZ(neigh_wait); NZ(neigh_drop);
	NZ(gso_sends); NZ(gro_recvs);
#undef NZ
	if (s->foreign != 0)
		printf(" (bench: %" PRIu64 " foreign)", s->foreign);
	if (s->reordered != 0)
		printf(" (bench: %" PRIu64 " reordered)", s->reordered);
	printf("\n");
}

/* Print the summary; returns the exit status. */
static int
report(struct side *snd, struct side *rcv)
{
	double tx_pps = 0, tx_gbps = 0, rx_pps = 0, rx_gbps = 0;
	int64_t sent = -1, recvd = -1;
	double loss = -1;
	int rc = 0;

	printf("dpq-drvbench: mode %s, %u-byte datagrams, burst %u",
			mode_names[cfg.mode], cfg.size, cfg.burst);
	if (snd != NULL && cfg.window != 0)
		printf(", window %u", cfg.window);
	else if (snd != NULL)
		printf(", no flow control");
	printf("\n");
	if (snd != NULL) {
		print_rate(snd, &tx_pps, &tx_gbps);
		sent = (int64_t)snd->pkts;
		if (snd->peer_known)
			recvd = (int64_t)snd->peer_count;
		if (snd->error != NULL)
			rc = 1;
	}
	if (rcv != NULL) {
		print_rate(rcv, &rx_pps, &rx_gbps);
		recvd = (int64_t)rcv->pkts;
		if (rcv->peer_known)
			sent = (int64_t)rcv->peer_count;
		if (rcv->error != NULL)
			rc = 1;
	}
	if (sent > 0 && recvd >= 0) {
		loss = 100.0 * (double)(sent - recvd) / (double)sent;
		printf("  loss: %" PRId64 " of %" PRId64 " (%.3f%%)\n",
				sent - recvd, sent, loss);
	} else {
		printf("  loss: unknown\n");
	}
	if (snd != NULL)
		print_stats(snd);
	if (rcv != NULL)
		print_stats(rcv);
	printf("RESULT mode=%s role=%s size=%u window=%u sent=%" PRId64
			" received=%" PRId64 " tx_pps=%.0f tx_gbps=%.3f"
			" rx_pps=%.0f rx_gbps=%.3f loss_pct=%.3f ok=%d\n",
			mode_names[cfg.mode],
			snd && rcv ? "both" : snd ? "sender" : "receiver",
			cfg.size, cfg.window, sent, recvd, tx_pps, tx_gbps, rx_pps,
			rx_gbps, loss, rc == 0);
	return rc;
}

/* ---- options ------------------------------------------------------------------ */

static void
usage(FILE *f)
{
	fprintf(f,
"usage: dpq-drvbench [EAL args --] --mode MODE [options]\n"
"modes: ring | memif --role server|client | udp [--role ...]\n"
"       | dpdk-kernel (--kernel-side [--reverse] | --role ...)\n"
"  --size BYTES    UDP payload per datagram, %u..%u (1350)\n"
"  --count N       datagrams to send, or\n"
"  --seconds S     how long to send (default 3 when no --count)\n"
"  --burst N       datagrams per burst, 1..%u (32)\n"
"  --role R        server (receives) or client (sends): one side only\n"
"  --local ADDR    this side's IP:port\n"
"  --peer ADDR     the other side's IP:port\n"
"  --kernel-side   dpdk-kernel: kernel UDP driver at --peer, in-process\n"
"  --reverse       dpdk-kernel: kernel side sends, DPDK side receives\n"
"  --port N        DPDK port (default: the first)\n"
"  --wait S        seconds to wait for the peer (10)\n"
"  --window N      sender: at most N datagrams in flight; the receiver\n"
"                  acks every N/8 (0: no flow control, the default)\n"
"  --no-gso, --no-gro  kernel UDP driver without UDP GSO / GRO\n"
"default EAL args: --no-huge --no-shconf --no-pci -m 512 --log-level=error\n"
"(two processes with --role: give each its own lcore, -l 0 / -l 1)\n",
		BENCH_HDR_LEN, DPQ_DEFAULT_MAX_UDP_PAYLOAD, BENCH_BURST_MAX);
}

static int
parse_num(const char *s, double lo, double hi, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

static int
parse_opts(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "mode", required_argument, NULL, 'm' },
		{ "size", required_argument, NULL, 's' },
		{ "count", required_argument, NULL, 'n' },
		{ "seconds", required_argument, NULL, 't' },
		{ "burst", required_argument, NULL, 'b' },
		{ "role", required_argument, NULL, 'r' },
		{ "local", required_argument, NULL, 'l' },
		{ "peer", required_argument, NULL, 'p' },
		{ "kernel-side", no_argument, NULL, 'k' },
		{ "reverse", no_argument, NULL, 'R' },
		{ "port", required_argument, NULL, 'P' },
		{ "wait", required_argument, NULL, 'w' },
		{ "window", required_argument, NULL, 'W' },
		{ "no-gso", no_argument, NULL, 'G' },
		{ "no-gro", no_argument, NULL, 'g' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool have_mode = false;
	double v;
	int c;
	unsigned int i;

	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'm':
			for (i = 0; i < RTE_DIM(mode_names); i++)
				if (strcmp(optarg, mode_names[i]) == 0)
					break;
			if (i == RTE_DIM(mode_names))
				goto bad;
			cfg.mode = (enum mode)i;
			have_mode = true;
			break;
		case 's':
			if (parse_num(optarg, BENCH_HDR_LEN,
					DPQ_DEFAULT_MAX_UDP_PAYLOAD, &v) != 0)
				goto bad;
			cfg.size = (uint32_t)v;
			break;
		case 'n':
			if (parse_num(optarg, 1, 1e12, &v) != 0)
				goto bad;
			cfg.count = (uint64_t)v;
			break;
		case 't':
			if (parse_num(optarg, 0.01, 3600, &v) != 0)
				goto bad;
			cfg.seconds = v;
			break;
		case 'b':
			if (parse_num(optarg, 1, BENCH_BURST_MAX, &v) != 0)
				goto bad;
			cfg.burst = (uint16_t)v;
			break;
		case 'r':
			if (strcmp(optarg, "server") == 0)
				cfg.role = ROLE_RECV;
			else if (strcmp(optarg, "client") == 0)
				cfg.role = ROLE_SEND;
			else
				goto bad;
			break;
		case 'l':
			if (dpq_addr_parse(optarg, &cfg.local) != 0)
				goto bad;
			cfg.have_local = true;
			break;
		case 'p':
			if (dpq_addr_parse(optarg, &cfg.peer) != 0)
				goto bad;
			cfg.have_peer = true;
			break;
		case 'k':
			cfg.kernel_side = true;
			break;
		case 'R':
			cfg.reverse = true;
			break;
		case 'P':
			if (parse_num(optarg, 0, RTE_MAX_ETHPORTS - 1, &v) != 0)
				goto bad;
			cfg.port = (int)v;
			break;
		case 'w':
			if (parse_num(optarg, 0.1, 600, &v) != 0)
				goto bad;
			cfg.wait = v;
			break;
		case 'W':
			if (parse_num(optarg, 0, 1 << 20, &v) != 0)
				goto bad;
			cfg.window = (uint32_t)v;
			break;
		case 'G':
			cfg.gso = false;
			break;
		case 'g':
			cfg.gro = false;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "dpq-drvbench: unexpected argument '%s'\n",
				argv[optind]);
		return -1;
	}
	if (!have_mode) {
		fprintf(stderr, "dpq-drvbench: --mode is required\n");
		usage(stderr);
		return -1;
	}
	if (cfg.count != 0 && cfg.seconds != 0) {
		fprintf(stderr, "dpq-drvbench: --count or --seconds, not both\n");
		return -1;
	}
	if (cfg.count == 0 && cfg.seconds == 0)
		cfg.seconds = 3;
	if (cfg.mode == MODE_MEMIF && cfg.role == ROLE_NONE) {
		fprintf(stderr, "dpq-drvbench: memif needs --role\n");
		return -1;
	}
	if (cfg.mode == MODE_RING && cfg.role != ROLE_NONE) {
		fprintf(stderr, "dpq-drvbench: ring runs both sides\n");
		return -1;
	}
	if (cfg.mode == MODE_DPDK_KERNEL && !cfg.kernel_side &&
			cfg.role == ROLE_NONE) {
		fprintf(stderr, "dpq-drvbench: dpdk-kernel needs "
				"--kernel-side or --role\n");
		return -1;
	}
	if (cfg.mode == MODE_DPDK_KERNEL && cfg.kernel_side &&
			cfg.role != ROLE_NONE) {
		fprintf(stderr, "dpq-drvbench: --kernel-side runs both sides "
				"(use --reverse for the direction)\n");
		return -1;
	}
	return 0;
bad:
	for (i = 0; opts[i].name != NULL && opts[i].val != c; i++)
		;
	fprintf(stderr, "dpq-drvbench: bad value for --%s: '%s'\n",
			opts[i].name != NULL ? opts[i].name : "?", optarg);
	usage(stderr);
	return -1;
}

static void
on_signal(int sig)
{
	RTE_SET_USED(sig);
	force_quit = 1;
}

/* ---- modes -------------------------------------------------------------------- */

static void
set_default(struct dpq_addr *a, bool have, const char *def)
{
	if (!have)
		(void)dpq_addr_parse(def, a);
}

static int
run_ring(void)
{
	struct rte_ring *r[2] = { NULL, NULL };
	struct dpq_driver *d[2] = { NULL, NULL };
	struct dpq_addr addr[2];
	struct side snd, rcv;
	struct side *sides[2] = { &snd, &rcv };
	char what[2][96];
	int port[2] = { -1, -1 }, rc = 1;
	unsigned int i;

	(void)dpq_addr_parse("198.18.0.1:9000", &addr[0]);
	(void)dpq_addr_parse("198.18.0.2:9000", &addr[1]);
	for (i = 0; i < 2; i++) {
		char name[32];

		snprintf(name, sizeof(name), "dpqbench_r%u", i);
		r[i] = rte_ring_create(name, BENCH_RING_SIZE, rte_socket_id(),
				RING_F_SP_ENQ | RING_F_SC_DEQ);
		if (r[i] == NULL) {
			fprintf(stderr, "dpq-drvbench: ring: %s\n",
					rte_strerror(rte_errno));
			goto out;
		}
	}
	/* port 0 receives on r0 and sends on r1, port 1 the opposite */
	port[0] = rte_eth_from_rings("dpqbench_p0", &r[0], 1, &r[1], 1,
			rte_socket_id());
	port[1] = rte_eth_from_rings("dpqbench_p1", &r[1], 1, &r[0], 1,
			rte_socket_id());
	if (port[0] < 0 || port[1] < 0) {
		fprintf(stderr, "dpq-drvbench: rte_eth_from_rings: %s\n",
				rte_strerror(rte_errno));
		goto out;
	}
	for (i = 0; i < 2; i++) {
		d[i] = open_dpdk((uint16_t)port[i], &addr[i], what[i],
				sizeof(what[i]));
		if (d[i] == NULL)
			goto out;
	}
	side_init(&snd, ROLE_SEND, d[0], &addr[1], what[0]);
	side_init(&rcv, ROLE_RECV, d[1], NULL, what[1]);
	run_sides(sides, 2);
	side_cleanup(&snd);
	rc = report(&snd, &rcv);
out:
	for (i = 0; i < 2; i++)
		if (d[i] != NULL)
			dpq_driver_close(d[i]);
		else if (port[i] >= 0)
			rte_eth_dev_close((uint16_t)port[i]);
	for (i = 0; i < 2; i++)
		rte_ring_free(r[i]);
	return rc;
}

/* One side on a DPDK port of the EAL args (memif, or dpdk-kernel --role);
 * the peer address matters to the client (sender) only. */
static int
run_dpdk_one(const char *def_local, const char *def_peer)
{
	struct side s;
	struct side *sides[1] = { &s };
	struct dpq_driver *d;
	int port = first_port(), rc;
	char what[96];

	if (port < 0) {
		fprintf(stderr, "dpq-drvbench: no DPDK port (give one with "
				"--vdev in the EAL args)\n");
		return 1;
	}
	set_default(&cfg.local, cfg.have_local, def_local);
	set_default(&cfg.peer, cfg.have_peer, def_peer);
	d = open_dpdk((uint16_t)port, &cfg.local, what, sizeof(what));
	if (d == NULL)
		return 1;
	side_init(&s, cfg.role, d, cfg.role == ROLE_SEND ? &cfg.peer : NULL,
			what);
	/* scripts wait for this line before starting the other process */
	printf("dpq-drvbench: %s ready: %s\n", s.name, what);
	fflush(stdout);
	run_sides(sides, 1);
	side_cleanup(&s);
	rc = report(cfg.role == ROLE_SEND ? &s : NULL,
			cfg.role == ROLE_RECV ? &s : NULL);
	dpq_driver_close(d);
	return rc;
}

static int
run_udp(void)
{
	struct dpq_driver *ds = NULL, *dr = NULL;
	struct side snd, rcv;
	struct side *sides[2] = { &snd, &rcv };
	char ws[96], wr[96];
	struct dpq_addr lr, any;
	int rc = 1;

	if (cfg.role != ROLE_NONE) {
		struct side s;
		struct side *one[1] = { &s };
		struct dpq_driver *d;
		char w[96];

		set_default(&cfg.local, cfg.have_local,
				cfg.role == ROLE_RECV ? "127.0.0.1:9001" :
				"127.0.0.1:0");
		set_default(&cfg.peer, cfg.have_peer, "127.0.0.1:9001");
		d = open_kernel(&cfg.local, w, sizeof(w));
		if (d == NULL)
			return 1;
		side_init(&s, cfg.role, d,
				cfg.role == ROLE_SEND ? &cfg.peer : NULL, w);
		printf("dpq-drvbench: %s ready: %s\n", s.name, w);
		fflush(stdout);
		run_sides(one, 1);
		side_cleanup(&s);
		rc = report(cfg.role == ROLE_SEND ? &s : NULL,
				cfg.role == ROLE_RECV ? &s : NULL);
		dpq_driver_close(d);
		return rc;
	}
	set_default(&cfg.local, cfg.have_local, "127.0.0.1:0");
	any = cfg.local;
	any.port = 0;
	dr = open_kernel(&cfg.local, wr, sizeof(wr));
	ds = open_kernel(&any, ws, sizeof(ws));
	if (dr == NULL || ds == NULL)
		goto out;
	dpq_driver_local_addr(dr, &lr);
	side_init(&snd, ROLE_SEND, ds, &lr, ws);
	side_init(&rcv, ROLE_RECV, dr, NULL, wr);
	run_sides(sides, 2);
	side_cleanup(&snd);
	rc = report(&snd, &rcv);
out:
	if (ds != NULL)
		dpq_driver_close(ds);
	if (dr != NULL)
		dpq_driver_close(dr);
	return rc;
}

/* DPDK port (net_tap / net_af_packet) with a kernel UDP driver as the
 * other side in this process. The kernel side binds --peer, an address of
 * the kernel interface facing the DPDK port; the DPDK side is --local. */
static int
run_dpdk_kernel(void)
{
	struct dpq_driver *dd = NULL, *dk = NULL;
	struct side snd, rcv;
	struct side *sides[2] = { &snd, &rcv };
	char wd[96], wk[96];
	int port, rc = 1;

	if (!cfg.kernel_side)
		return run_dpdk_one("198.18.0.2:9000", "198.18.0.1:9001");
	port = first_port();
	if (port < 0) {
		fprintf(stderr, "dpq-drvbench: no DPDK port (give one with "
				"--vdev in the EAL args)\n");
		return 1;
	}
	set_default(&cfg.local, cfg.have_local, "198.18.0.2:9000");
	set_default(&cfg.peer, cfg.have_peer, "198.18.0.1:9001");
	dd = open_dpdk((uint16_t)port, &cfg.local, wd, sizeof(wd));
	if (dd == NULL)
		goto out;
	dk = open_kernel(&cfg.peer, wk, sizeof(wk));
	if (dk == NULL)
		goto out;
	if (!cfg.reverse) {
		side_init(&snd, ROLE_SEND, dd, &cfg.peer, wd);
		side_init(&rcv, ROLE_RECV, dk, NULL, wk);
	} else {
		side_init(&snd, ROLE_SEND, dk, &cfg.local, wk);
		side_init(&rcv, ROLE_RECV, dd, NULL, wd);
	}
	run_sides(sides, 2);
	side_cleanup(&snd);
	rc = report(&snd, &rcv);
out:
	if (dk != NULL)
		dpq_driver_close(dk);
	if (dd != NULL)
		dpq_driver_close(dd);
	return rc;
}

int
main(int argc, char **argv)
{
	static char *def_eal[] = {
		NULL, "--no-huge", "--no-shconf", "--no-pci", "-m", "512",
		"--log-level=error", NULL,
	};
	char **eal_argv, **opt_argv;
	int eal_argc, opt_argc, i, dash = -1, rc;

	/* [EAL args --] options: without "--" everything is ours */
	for (i = 1; i < argc; i++)
		if (strcmp(argv[i], "--") == 0) {
			dash = i;
			break;
		}
	if (dash > 1) {
		eal_argv = argv;
		eal_argc = dash;
	} else {
		def_eal[0] = argv[0];
		eal_argv = def_eal;
		eal_argc = (int)RTE_DIM(def_eal) - 1;
	}
	opt_argv = dash >= 0 ? argv + dash : argv;
	opt_argc = dash >= 0 ? argc - dash : argc;
	if (parse_opts(opt_argc, opt_argv) != 0)
		return 2;

	rc = rte_eal_init(eal_argc, eal_argv);
	if (rc < 0) {
		fprintf(stderr, "dpq-drvbench: EAL init failed: %s\n",
				rte_strerror(rte_errno));
		return 1;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	tsc_hz = rte_get_tsc_hz();
	hard_deadline = rte_rdtsc() + ms_to_tsc(1000 * (2 * cfg.wait +
			(cfg.count != 0 ? 120 : cfg.seconds) + 10));

	switch (cfg.mode) {
	case MODE_RING:
		rc = run_ring();
		break;
	case MODE_MEMIF:
		rc = cfg.role == ROLE_RECV ?
			run_dpdk_one("198.18.0.2:9000", "198.18.0.1:9000") :
			run_dpdk_one("198.18.0.1:9000", "198.18.0.2:9000");
		break;
	case MODE_UDP:
		rc = run_udp();
		break;
	case MODE_DPDK_KERNEL:
		rc = run_dpdk_kernel();
		break;
	default:
		rc = 2;
	}
	rte_eal_cleanup();
	return rc;
}
