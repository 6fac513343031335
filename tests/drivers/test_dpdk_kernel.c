/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The DPDK driver against the Linux kernel's own UDP stack, run inside a
 * network namespace made by tests/drivers/netns_*.sh:
 *
 *   test_dpdk_kernel [EAL args] -- tap IFACE4 IFACE6   (net_tap ports 0, 1)
 *   test_dpdk_kernel [EAL args] -- afp KIFACE          (net_af_packet port 0)
 *
 * tap: the tap interfaces exist only after EAL init, so this program gives
 * them their kernel-side address and brings them up itself. afp: the script
 * configured the kernel end of the veth pair (KIFACE).
 *
 * For each family: DPDK sends to a kernel UDP socket (the driver resolves the
 * kernel's MAC by ARP / NS), then the kernel's neighbour cache is flushed
 * and the kernel sends to DPDK (the kernel resolves DPDK's address; the
 * driver answers), DPDK replies to the address it saw, and the kernel's
 * neighbour entry for the DPDK address must exist with the port's MAC. No
 * static neighbour entries anywhere. Every wait is bounded (WAIT_MS).
 * The IP ECN bits cross both ways (RFC 9000 §13.4): what DPDK sends with
 * ECT(0) or ECT(1) the kernel socket reads through IP_RECVTOS /
 * IPV6_RECVTCLASS, and what the kernel sends with CE (IP_TOS /
 * IPV6_TCLASS) the driver reports in the packet's meta.
 *
 * Addresses: 198.18.0.0/24, 198.18.1.0/24 and 2001:db8:d0::/64 only (RFC
 * 2544 benchmarking and RFC 3849 documentation ranges), inside the netns.
 * Exit: 0 pass, 1 fail.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "dpquic/driver.h"
#include "drivers/dpdk/dpdk_driver.h"

#define WAIT_MS		3000
#define KPORT		5000
#define DPORT		4433

#define CHECK(cond, ...) do { \
	if (!(cond)) { \
		fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
		fprintf(stderr, __VA_ARGS__); \
		fprintf(stderr, "\n"); \
		return -1; \
	} \
} while (0)

struct kcase {
	int family;
	uint16_t port_id;
	const char *iface;	/* kernel interface facing the DPDK port */
	const char *dpdk_ip;
	const char *kern_ip;
	unsigned int prefix;
	bool configure;		/* give iface its address and bring it up */
};

static int
sh(const char *fmt, const char *a, const char *b, const char *c)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), fmt, a, b, c);
	return system(cmd);
}

static uint64_t
deadline(unsigned int ms)
{
	return rte_get_tsc_cycles() + rte_get_tsc_hz() * ms / 1000;
}

static int
dpdk_send(struct dpq_driver *d, const struct dpq_addr *to, const char *s,
		uint8_t ecn)
{
	struct rte_mbuf *m;
	char *p;

	if (dpq_driver_alloc_bulk(d, 0, &m, 1) != 0)
		return -1;
	dpq_pkt_meta(m)->peer = *to;
	dpq_pkt_meta(m)->ecn = ecn;
	p = rte_pktmbuf_append(m, (uint16_t)strlen(s));
	if (p == NULL) {
		rte_pktmbuf_free(m);
		return -1;
	}
	memcpy(p, s, strlen(s));
	return dpq_driver_tx_burst(d, 0, &m, 1) == 1 ? 0 : -1;
}

/* The ECN bits of a received datagram's TOS / TCLASS control message;
 * -1 if there is none. */
static int
cmsg_ecn(struct msghdr *mh)
{
	struct cmsghdr *c;

	for (c = CMSG_FIRSTHDR(mh); c != NULL; c = CMSG_NXTHDR(mh, c)) {
		if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS)
			return *(const uint8_t *)CMSG_DATA(c) & 0x3;
		if (c->cmsg_level == IPPROTO_IPV6 &&
		    c->cmsg_type == IPV6_TCLASS) {
			int v;

			memcpy(&v, CMSG_DATA(c), sizeof(v));
			return v & 0x3;
		}
	}
	return -1;
}

/* Poll the driver (answering ARP/ND) and the socket until the socket has a
 * datagram; returns its length or -1, and its ECN bits in *ecn. */
static ssize_t
kern_recv(struct dpq_driver *d, int fd, char *buf, size_t cap,
		struct sockaddr_storage *from, int *ecn)
{
	uint64_t end = deadline(WAIT_MS);

	while (rte_get_tsc_cycles() < end) {
		struct rte_mbuf *b[8];
		socklen_t fl = sizeof(*from);
		uint16_t n = dpq_driver_rx_burst(d, 0, b, 8);
		ssize_t r;

		if (n != 0) {
			dpq_driver_free_bulk(d, b, n);
			fprintf(stderr, "unexpected datagram at DPDK\n");
			return -1;
		}
		struct iovec iov = { .iov_base = buf, .iov_len = cap };
		union {
			char b[CMSG_SPACE(sizeof(int)) * 2];
			struct cmsghdr align;
		} ctl;
		struct msghdr mh = {
			.msg_name = from, .msg_namelen = fl,
			.msg_iov = &iov, .msg_iovlen = 1,
			.msg_control = ctl.b, .msg_controllen = sizeof(ctl.b),
		};

		r = recvmsg(fd, &mh, MSG_DONTWAIT);
		if (r >= 0) {
			*ecn = cmsg_ecn(&mh);
			return r;
		}
		usleep(100);
	}
	return -1;
}

/* Poll the driver until a datagram arrives. */
static struct rte_mbuf *
dpdk_recv(struct dpq_driver *d)
{
	uint64_t end = deadline(WAIT_MS);

	while (rte_get_tsc_cycles() < end) {
		struct rte_mbuf *m;

		if (dpq_driver_rx_burst(d, 0, &m, 1) == 1)
			return m;
		usleep(50);
	}
	return NULL;
}

static int
kernel_has_neigh(const struct kcase *k, const uint8_t mac[6])
{
	char cmd[256], line[512], want[32];
	bool found = false;
	FILE *f;

	snprintf(want, sizeof(want), "%02x:%02x:%02x:%02x:%02x:%02x",
			mac[0], mac[1], mac[2], mac[3], mac[4], mac[5]);
	snprintf(cmd, sizeof(cmd), "ip -%c neigh show %s dev %s",
			k->family == AF_INET ? '4' : '6', k->dpdk_ip, k->iface);
	f = popen(cmd, "r");
	if (f == NULL)
		return 0;
	while (fgets(line, sizeof(line), f) != NULL) {
		fprintf(stderr, "kernel neighbour: %s", line);
		if (strstr(line, want) != NULL &&
				strstr(line, "FAILED") == NULL &&
				strstr(line, "INCOMPLETE") == NULL)
			found = true;
	}
	pclose(f);
	return found;
}

static void
dump_stats(const struct dpq_driver *d, const struct kcase *k)
{
	struct dpq_driver_stats st;
	struct dpq_dpdk_xstats xs;
	int i;

	dpq_driver_stats(d, &st);
	dpq_dpdk_xstats(d, &xs);
	fprintf(stderr, "%s: rx %lu tx %lu rx_dropped %lu rx_bad %lu "
			"arp_rx %lu arp_tx %lu neigh_wait %lu neigh_drop %lu\n",
			k->dpdk_ip, (unsigned long)st.rx_pkts,
			(unsigned long)st.tx_pkts,
			(unsigned long)st.rx_dropped,
			(unsigned long)st.rx_bad, (unsigned long)st.arp_rx,
			(unsigned long)st.arp_tx,
			(unsigned long)st.neigh_wait,
			(unsigned long)st.neigh_drop);
	for (i = 0; i < DPQ_NP_REASON_MAX; i++)
		if (xs.reason[i] != 0)
			fprintf(stderr, "  %s: %lu\n", dpq_np_reason_name(i),
					(unsigned long)xs.reason[i]);
}

static int
run_case(const struct kcase *k)
{
	struct dpq_dpdk_conf c;
	struct dpq_driver *d;
	struct dpq_driver_stats st;
	struct sockaddr_storage ks, from;
	struct dpq_addr kaddr, daddr;
	struct rte_mbuf *m;
	uint8_t mac[6];
	char buf[2048], astr[64];
	ssize_t r;
	int fd, i, one = 1, ecn = -1, ce = 3;
	socklen_t kslen;

	memset(&c, 0, sizeof(c));
	c.port_id = k->port_id;
	c.nb_queues = 1;
	c.nb_rxd = c.nb_txd = 256;
	c.nb_mbufs = 2047;
	c.socket_id = -1;
	c.prefix_len = (uint8_t)k->prefix;
	CHECK(dpq_addr_parse(k->dpdk_ip, &c.local) == 0, "addr");
	c.local.port = DPORT;
	d = dpq_driver_dpdk_open(&c);
	CHECK(d != NULL, "open port %u: %s", k->port_id,
			rte_strerror(rte_errno));
	CHECK(dpq_driver_start(d) == 0, "start");
	dpq_dpdk_mac(d, mac);
	daddr = c.local;

	if (k->configure) {
		CHECK(sh(k->family == AF_INET ?
				"ip addr add %s/%s dev %s" :
				"ip addr add %s/%s dev %s nodad",
				k->kern_ip, k->family == AF_INET ? "24" : "64",
				k->iface) == 0, "ip addr add");
		CHECK(sh("ip link set %s up%s%s", k->iface, "", "") == 0,
				"ip link up");
	}

	/* the kernel's socket */
	CHECK(dpq_addr_parse(k->kern_ip, &kaddr) == 0, "kern addr");
	kaddr.port = KPORT;
	memset(&ks, 0, sizeof(ks));
	if (k->family == AF_INET) {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ks;

		s4->sin_family = AF_INET;
		s4->sin_port = htons(KPORT);
		memcpy(&s4->sin_addr, kaddr.v4, 4);
		kslen = sizeof(*s4);
	} else {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ks;

		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(KPORT);
		memcpy(&s6->sin6_addr, kaddr.v6, 16);
		kslen = sizeof(*s6);
	}
	fd = socket(k->family, SOCK_DGRAM, 0);
	CHECK(fd >= 0, "socket: %s", strerror(errno));
	for (i = 0; i < 50 && bind(fd, (struct sockaddr *)&ks, kslen) != 0;
			i++)
		usleep(20000);	/* address still tentative */
	CHECK(i < 50, "bind %s: %s", k->kern_ip, strerror(errno));
	CHECK(setsockopt(fd, k->family == AF_INET ? IPPROTO_IP : IPPROTO_IPV6,
			k->family == AF_INET ? IP_RECVTOS : IPV6_RECVTCLASS,
			&one, sizeof(one)) == 0, "RECVTOS: %s", strerror(errno));

	/* 1. DPDK -> kernel: the driver resolves the kernel's MAC */
	CHECK(dpdk_send(d, &kaddr, "dpdk to kernel", 2) == 0, "dpdk send");
	r = kern_recv(d, fd, buf, sizeof(buf), &from, &ecn);
	CHECK(r == 14 && memcmp(buf, "dpdk to kernel", 14) == 0,
			"kernel did not receive (r=%zd)", r);
	CHECK(ecn == 2, "kernel read ECN %d, DPDK sent ECT(0)", ecn);
	if (k->family == AF_INET)
		CHECK(memcmp(&((struct sockaddr_in *)&from)->sin_addr,
				daddr.v4, 4) == 0 &&
				ntohs(((struct sockaddr_in *)&from)->sin_port)
				== DPORT, "kernel saw a wrong source");
	else
		CHECK(memcmp(&((struct sockaddr_in6 *)&from)->sin6_addr,
				daddr.v6, 16) == 0 &&
				ntohs(((struct sockaddr_in6 *)&from)->sin6_port)
				== DPORT, "kernel saw a wrong source");
	dpq_driver_stats(d, &st);
	CHECK(st.neigh_wait >= 1 && st.arp_rx >= 1,
			"driver did not resolve (wait %lu, arp_rx %lu)",
			(unsigned long)st.neigh_wait,
			(unsigned long)st.arp_rx);

	/* 2. kernel -> DPDK, after the kernel forgot every neighbour: the
	 * kernel must resolve the DPDK address and the driver answer */
	CHECK(sh("ip neigh flush dev %s%s%s", k->iface, "", "") == 0,
			"neigh flush");
	{
		struct sockaddr_storage to = ks;

		if (k->family == AF_INET) {
			struct sockaddr_in *s4 = (struct sockaddr_in *)&to;

			memcpy(&s4->sin_addr, daddr.v4, 4);
			s4->sin_port = htons(DPORT);
		} else {
			struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&to;

			memcpy(&s6->sin6_addr, daddr.v6, 16);
			s6->sin6_port = htons(DPORT);
		}
		/* sent with CE: the driver must report it */
		CHECK(setsockopt(fd, k->family == AF_INET ? IPPROTO_IP :
				IPPROTO_IPV6, k->family == AF_INET ? IP_TOS :
				IPV6_TCLASS, &ce, sizeof(ce)) == 0,
				"IP_TOS: %s", strerror(errno));
		CHECK(sendto(fd, "kernel to dpdk", 14, 0,
				(struct sockaddr *)&to, kslen) == 14,
				"sendto: %s", strerror(errno));
	}
	m = dpdk_recv(d);
	if (m == NULL)
		dump_stats(d, k);
	CHECK(m != NULL, "DPDK did not receive the kernel's datagram");
	CHECK(rte_pktmbuf_data_len(m) == 14 &&
			memcmp(rte_pktmbuf_mtod(m, char *), "kernel to dpdk",
			14) == 0, "payload");
	CHECK(dpq_addr_equal(&dpq_pkt_meta(m)->peer, &kaddr),
			"peer %s", dpq_addr_format(&dpq_pkt_meta(m)->peer,
			astr, sizeof(astr)));
	CHECK(dpq_addr_equal(&dpq_pkt_meta(m)->local, &daddr), "local");
	CHECK(dpq_pkt_meta(m)->ecn == 3, "driver read ECN %u, kernel sent CE",
			dpq_pkt_meta(m)->ecn);
	kaddr = dpq_pkt_meta(m)->peer;
	dpq_driver_free_bulk(d, &m, 1);

	/* 3. DPDK answers the address it saw */
	CHECK(dpdk_send(d, &kaddr, "reply from dpdk, longer", 1) == 0, "send");
	r = kern_recv(d, fd, buf, sizeof(buf), &from, &ecn);
	CHECK(r == 23 && memcmp(buf, "reply from dpdk, longer", 23) == 0,
			"kernel did not receive the reply (r=%zd)", r);
	CHECK(ecn == 1, "kernel read ECN %d, DPDK sent ECT(1)", ecn);

	/* 4. the kernel learned the DPDK address by itself */
	CHECK(kernel_has_neigh(k, mac), "no kernel neighbour entry for %s",
			k->dpdk_ip);

	dump_stats(d, k);
	dpq_driver_stats(d, &st);
	CHECK(st.rx_pkts == 1 && st.tx_pkts == 2, "counts");
	CHECK(st.rx_bad == 0, "bad frames from the kernel");
	close(fd);
	dpq_driver_close(d);
	fprintf(stderr, "PASS %s <-> %s\n", k->dpdk_ip, k->kern_ip);
	return 0;
}

int
main(int argc, char **argv)
{
	int n = rte_eal_init(argc, argv);
	int rc = 0;

	if (n < 0) {
		fprintf(stderr, "EAL init: %s\n", rte_strerror(rte_errno));
		return 1;
	}
	argc -= n;
	argv += n;
	if (argc >= 4 && strcmp(argv[1], "tap") == 0) {
		const struct kcase k4 = { AF_INET, 0, argv[2], "198.18.0.2",
			"198.18.0.1", 24, true };
		const struct kcase k6 = { AF_INET6, 1, argv[3],
			"2001:db8:d0::2", "2001:db8:d0::1", 64, true };

		if (rte_eth_dev_count_avail() < 2) {
			fprintf(stderr, "need two net_tap ports\n");
			rc = 1;
		} else if (run_case(&k4) != 0 || run_case(&k6) != 0) {
			rc = 1;
		}
	} else if (argc >= 3 && strcmp(argv[1], "afp") == 0) {
		const struct kcase k4 = { AF_INET, 0, argv[2], "198.18.1.2",
			"198.18.1.1", 24, false };

		if (rte_eth_dev_count_avail() < 1 || run_case(&k4) != 0)
			rc = 1;
	} else {
		fprintf(stderr, "usage: %s [EAL] -- tap IF4 IF6 | afp KIF\n",
				argv[0]);
		rc = 1;
	}
	rte_eal_cleanup();
	return rc;
}
