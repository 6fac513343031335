/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Kernel UDP socket driver: struct dpq_driver_ops over ordinary UDP sockets,
 * for clients on machines without DPDK ports, for development and for tests.
 *
 * Each queue is one non-blocking socket bound to the configured address
 * (SO_REUSEPORT spreads flows over the sockets when there are several).
 * Datagrams move in bursts: recvmmsg reads straight into mbufs; sendmmsg
 * sends from them without copies. Where the kernel has them, UDP GSO (one
 * sendmsg carrying many equal-sized datagrams, UDP_SEGMENT) and UDP GRO (one
 * receive returning many coalesced datagrams, UDP_GRO) cut the syscall and
 * per-packet kernel cost. With GRO on, receives land in 64 KB scratch slots
 * and are split back into one mbuf per original datagram (one copy),
 * preserving datagram boundaries exactly.
 *
 * Datagrams larger than an mbuf's data room (RTE_MBUF_DEFAULT_DATAROOM,
 * 2048 bytes) are dropped on receive and counted in rx_dropped; transmit
 * accepts chained mbufs (up to DPQ_UDP_TX_MAX_SEGS segments).
 *
 * Threading: open/close on the control thread; each queue is used by one
 * thread (rx_burst, tx_burst, alloc_bulk on that queue); stats from any.
 */
#include <errno.h>
#include <time.h>
#include <linux/errqueue.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_log.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "dpquic/driver.h"

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif

/* Datagrams (messages) handled by one recvmmsg / sendmmsg call. */
#define DPQ_UDP_BURST_MAX 64
/* Most sockets one driver opens. */
#define DPQ_UDP_MAX_QUEUES 64
/* Default mbufs in the driver's pool. */
#define DPQ_UDP_DEFAULT_MBUFS 8191
/* Per-lcore mempool cache. */
#define DPQ_UDP_MBUF_CACHE 256
/* Socket buffer sizes asked for (the kernel may clamp them). */
#define DPQ_UDP_SOCKBUF (4 << 20)
/* UDP GSO segments per sendmsg: the kernel's UDP_MAX_SEGMENTS is 64 on
 * older kernels (newer ones allow more); 64 works on every kernel with GSO. */
#define DPQ_UDP_GSO_MAX_SEGS 64
/* Largest UDP payload of one IPv4 datagram: also the most bytes one GSO
 * sendmsg may carry (it is built as one super-datagram). */
#define DPQ_UDP_MAX_PAYLOAD 65507
/* A coalesced GRO receive can be as large as one maximal IP datagram: a
 * smaller buffer would silently truncate it (MSG_TRUNC) and lose datagrams. */
#define DPQ_UDP_GRO_BUF 65536
/* Receive slots (each DPQ_UDP_GRO_BUF bytes) per queue when GRO is on. */
#define DPQ_UDP_GRO_SLOTS 16u
/* Segments of one chained mbuf accepted for transmit. */
#define DPQ_UDP_TX_MAX_SEGS 4
/* iovecs of one transmit chunk (GSO messages use one per datagram). */
#define DPQ_UDP_TX_IOV (DPQ_UDP_BURST_MAX * DPQ_UDP_TX_MAX_SEGS)

RTE_LOG_REGISTER(dpq_udp_logtype, dpquic.driver.udp, NOTICE);
#define UDP_LOG(level, ...) \
	rte_log(RTE_LOG_ ## level, dpq_udp_logtype, "dpq_udp: " __VA_ARGS__)

/* Control-message space: pktinfo, TOS/TCLASS and UDP_GRO or UDP_SEGMENT. */
union udp_ctl {
	struct cmsghdr align;
	uint8_t buf[CMSG_SPACE(sizeof(struct in6_pktinfo)) +
		CMSG_SPACE(sizeof(int)) + CMSG_SPACE(sizeof(int))];
};

struct udp_qstats {
	uint64_t rx_pkts, rx_bytes, tx_pkts, tx_bytes;
	uint64_t rx_dropped, tx_dropped, alloc_fail;
	uint64_t gso_sends, gro_recvs;
	uint64_t icmp_errors;
	int icmp_errno;
	uint8_t icmp_type, icmp_code;
	struct dpq_addr icmp_dst, icmp_from;
};

/* One coalesced (or single) datagram received into a GRO scratch slot and
 * not yet handed out in full. */
struct udp_gro_slot {
	struct dpq_pkt_meta meta;
	uint32_t len;		/* bytes received in the slot */
	uint32_t off;		/* bytes already handed out */
	uint32_t seg;		/* size of each original datagram */
	bool skip;		/* truncated: deliver nothing */
};

struct udp_queue {
	int fd;
	bool recv_err;		/* IP_RECVERR on */
	bool errq;		/* an error may wait in the error queue */
	bool gso;		/* UDP_SEGMENT accepted by this socket */
	bool gro;		/* UDP_GRO enabled on this socket */
	bool gso_warned;

	/* receive */
	struct mmsghdr rx_msg[DPQ_UDP_BURST_MAX];
	struct iovec rx_iov[DPQ_UDP_BURST_MAX];
	struct sockaddr_storage rx_name[DPQ_UDP_BURST_MAX];
	union udp_ctl rx_ctl[DPQ_UDP_BURST_MAX];
	struct rte_mbuf *rx_mb[DPQ_UDP_BURST_MAX];

	/* GRO: scratch slots and what of them is still pending */
	uint8_t *gro_buf;
	struct udp_gro_slot gro_slot[DPQ_UDP_GRO_SLOTS];
	uint16_t gro_head, gro_count;

	/* transmit */
	struct mmsghdr tx_msg[DPQ_UDP_BURST_MAX];
	struct iovec tx_iov[DPQ_UDP_TX_IOV];
	struct sockaddr_storage tx_name[DPQ_UDP_BURST_MAX];
	union udp_ctl tx_ctl[DPQ_UDP_BURST_MAX];
	uint16_t tx_npkts[DPQ_UDP_BURST_MAX];	/* packets per message */
	uint16_t tx_ctl_noseg[DPQ_UDP_BURST_MAX]; /* ctl length w/o UDP_SEGMENT */
	uint32_t tx_bytes[DPQ_UDP_BURST_MAX];	/* payload bytes per message */
	bool tx_bad[DPQ_UDP_BURST_MAX];		/* drop without sending */

	struct udp_qstats st __rte_cache_aligned;
} __rte_cache_aligned;

struct udp_driver {
	struct dpq_driver base;	/* must be first */
	struct dpq_addr local;	/* bound address, real port */
	struct dpq_udp_conf conf;	/* as opened (rebind reuses it) */
	struct rte_mempool *pool;
	struct udp_queue *q;	/* nb_queues entries */
};

static inline struct udp_driver *
udp_drv(struct dpq_driver *d)
{
	return (struct udp_driver *)d;
}

/* ---- address conversion ------------------------------------------------ */

static socklen_t
addr_to_sockaddr(const struct dpq_addr *a, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (a->family == AF_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;

		sin->sin_family = AF_INET;
		sin->sin_port = htons(a->port);
		memcpy(&sin->sin_addr, a->v4, 4);
		return sizeof(*sin);
	}
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

	sin6->sin6_family = AF_INET6;
	sin6->sin6_port = htons(a->port);
	memcpy(&sin6->sin6_addr, a->v6, 16);
	return sizeof(*sin6);
}

static void
sockaddr_to_addr(const struct sockaddr_storage *ss, struct dpq_addr *a)
{
	memset(a, 0, sizeof(*a));
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)ss;

		a->family = AF_INET;
		a->port = ntohs(sin->sin_port);
		memcpy(a->v4, &sin->sin_addr, 4);
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 =
			(const struct sockaddr_in6 *)ss;

		a->family = AF_INET6;
		a->port = ntohs(sin6->sin6_port);
		memcpy(a->v6, &sin6->sin6_addr, 16);
	}
}

/* ---- ICMP errors (IP_RECVERR) ------------------------------------------- */

/*
 * Read what the kernel queued about our datagrams (RFC 1122 §4.1.3.3 asks
 * UDP to pass ICMP errors up): each ICMP or ICMPv6 error is counted and
 * the last one kept for the stats. Called only after a receive or send
 * said an error is pending, so a quiet socket costs no syscall.
 */
static void
errq_drain(struct udp_queue *q)
{
	unsigned int i;

	q->errq = false;
	for (i = 0; i < 16; i++) {
		union {
			char buf[512];
			struct cmsghdr align;
		} ctl;
		struct sockaddr_storage dst;
		struct msghdr mh = {
			.msg_name = &dst, .msg_namelen = sizeof(dst),
			.msg_control = ctl.buf, .msg_controllen = sizeof(ctl),
		};
		struct cmsghdr *c;

		if (recvmsg(q->fd, &mh, MSG_ERRQUEUE | MSG_DONTWAIT) < 0)
			return;
		for (c = CMSG_FIRSTHDR(&mh); c != NULL; c = CMSG_NXTHDR(&mh, c)) {
			const struct sock_extended_err *ee;
			struct sockaddr_storage from;
			const struct sockaddr *off;

			if (!((c->cmsg_level == SOL_IP &&
			       c->cmsg_type == IP_RECVERR) ||
			      (c->cmsg_level == SOL_IPV6 &&
			       c->cmsg_type == IPV6_RECVERR)))
				continue;
			ee = (const struct sock_extended_err *)CMSG_DATA(c);
			if (ee->ee_origin != SO_EE_ORIGIN_ICMP &&
			    ee->ee_origin != SO_EE_ORIGIN_ICMP6)
				continue;
			q->st.icmp_errors++;
			q->st.icmp_errno = (int)ee->ee_errno;
			q->st.icmp_type = ee->ee_type;
			q->st.icmp_code = ee->ee_code;
			sockaddr_to_addr(&dst, &q->st.icmp_dst);
			off = SO_EE_OFFENDER(ee);
			memset(&from, 0, sizeof(from));
			memcpy(&from, off, off->sa_family == AF_INET6 ?
				sizeof(struct sockaddr_in6) :
				sizeof(struct sockaddr_in));
			sockaddr_to_addr(&from, &q->st.icmp_from);
		}
	}
}

static bool
icmp_errno(int err)
{
	return err == ECONNREFUSED || err == EHOSTUNREACH ||
		err == ENETUNREACH || err == EHOSTDOWN || err == EPROTO;
}

/* ---- receive ------------------------------------------------------------ */

/* Integer payload of a control message: the kernel uses 1 byte (IP_TOS),
 * 2 bytes or an int (IPV6_TCLASS, UDP_GRO) depending on the option. */
static int
cmsg_int(const struct cmsghdr *c)
{
	const uint8_t *p = CMSG_DATA(c);
	size_t len = c->cmsg_len - CMSG_LEN(0);
	int v = 0;

	if (len >= sizeof(int)) {
		memcpy(&v, p, sizeof(int));
	} else if (len >= sizeof(uint16_t)) {
		uint16_t u;

		memcpy(&u, p, sizeof(u));
		v = u;
	} else if (len >= 1) {
		v = p[0];
	}
	return v;
}

/* Fill meta from a received message; returns the GRO segment size (0 when
 * the receive was not coalesced). */
static uint32_t
rx_parse(const struct udp_driver *ud, struct msghdr *mh,
		const struct sockaddr_storage *name, struct dpq_pkt_meta *meta,
		uint64_t tsc)
{
	struct cmsghdr *c;
	uint32_t gso = 0;

	memset(meta, 0, sizeof(*meta));
	sockaddr_to_addr(name, &meta->peer);
	meta->rx_tsc = tsc;
	for (c = CMSG_FIRSTHDR(mh); c != NULL; c = CMSG_NXTHDR(mh, c)) {
		if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO) {
			struct in_pktinfo pi;

			memcpy(&pi, CMSG_DATA(c), sizeof(pi));
			meta->local.family = AF_INET;
			memcpy(meta->local.v4, &pi.ipi_addr, 4);
		} else if (c->cmsg_level == IPPROTO_IPV6 &&
				c->cmsg_type == IPV6_PKTINFO) {
			struct in6_pktinfo pi;

			memcpy(&pi, CMSG_DATA(c), sizeof(pi));
			meta->local.family = AF_INET6;
			memcpy(meta->local.v6, &pi.ipi6_addr, 16);
		} else if ((c->cmsg_level == IPPROTO_IP &&
				c->cmsg_type == IP_TOS) ||
				(c->cmsg_level == IPPROTO_IPV6 &&
				c->cmsg_type == IPV6_TCLASS)) {
			meta->ecn = (uint8_t)(cmsg_int(c) & 0x3);
		} else if (c->cmsg_level == IPPROTO_UDP &&
				c->cmsg_type == UDP_GRO) {
			int v = cmsg_int(c);

			if (v > 0)
				gso = (uint32_t)v;
		}
	}
	if (meta->local.family != 0)
		meta->local.port = ud->local.port;
	return gso;
}

static void
rx_prepare(struct udp_queue *q, unsigned int i, void *base, size_t len)
{
	struct msghdr *mh = &q->rx_msg[i].msg_hdr;

	q->rx_iov[i].iov_base = base;
	q->rx_iov[i].iov_len = len;
	mh->msg_name = &q->rx_name[i];
	mh->msg_namelen = sizeof(q->rx_name[i]);
	mh->msg_iov = &q->rx_iov[i];
	mh->msg_iovlen = 1;
	mh->msg_control = q->rx_ctl[i].buf;
	mh->msg_controllen = sizeof(q->rx_ctl[i].buf);
	mh->msg_flags = 0;
	q->rx_msg[i].msg_len = 0;
}

/* Without GRO: recvmmsg straight into mbufs, no copy. */
static uint16_t
rx_direct(struct udp_driver *ud, struct udp_queue *q,
		struct rte_mbuf **pkts, uint16_t n)
{
	struct rte_mbuf **mb = q->rx_mb;
	uint16_t out = 0, nfree = 0;
	unsigned int i;
	uint64_t tsc;
	int r;

	if (n > DPQ_UDP_BURST_MAX)
		n = DPQ_UDP_BURST_MAX;
	if (rte_pktmbuf_alloc_bulk(ud->pool, mb, n) != 0) {
		q->st.alloc_fail++;
		return 0;
	}
	for (i = 0; i < n; i++)
		rx_prepare(q, i, rte_pktmbuf_mtod(mb[i], void *),
				rte_pktmbuf_tailroom(mb[i]));
	if (q->errq)
		errq_drain(q);
	r = recvmmsg(q->fd, q->rx_msg, n, MSG_DONTWAIT, NULL);
	if (r <= 0) {
		/* a pending ICMP error is reported by the next receive */
		if (r < 0 && q->recv_err && icmp_errno(errno))
			errq_drain(q);
		rte_pktmbuf_free_bulk(mb, n);
		return 0;
	}
	tsc = rte_rdtsc();
	for (i = 0; i < (unsigned int)r; i++) {
		struct msghdr *mh = &q->rx_msg[i].msg_hdr;
		struct rte_mbuf *m = mb[i];
		uint32_t len = q->rx_msg[i].msg_len;

		if (mh->msg_flags & MSG_TRUNC) {
			/* larger than an mbuf: not a datagram we can use */
			q->st.rx_dropped++;
			mb[nfree++] = m;
			continue;
		}
		rx_parse(ud, mh, &q->rx_name[i], dpq_pkt_meta(m), tsc);
		m->data_len = (uint16_t)len;
		m->pkt_len = len;
		q->st.rx_bytes += len;
		pkts[out++] = m;
	}
	/* unused mbufs: the dropped ones (moved to the front) and the tail */
	for (i = r; i < n; i++)
		mb[nfree++] = mb[i];
	if (nfree > 0)
		rte_pktmbuf_free_bulk(mb, nfree);
	q->st.rx_pkts += out;
	return out;
}

/* Hand out pending GRO datagrams, one mbuf each, from the scratch slots. */
static uint16_t
gro_drain(struct udp_queue *q, struct rte_mbuf **mb, uint16_t nmb,
		uint16_t *used, struct rte_mbuf **pkts, uint16_t out, uint16_t n)
{
	while (out < n && *used < nmb && q->gro_head < q->gro_count) {
		struct udp_gro_slot *s = &q->gro_slot[q->gro_head];
		const uint8_t *src = q->gro_buf +
			(size_t)q->gro_head * DPQ_UDP_GRO_BUF + s->off;
		uint32_t len = RTE_MIN(s->seg, s->len - s->off);
		struct rte_mbuf *m = mb[*used];

		if (s->skip) {
			q->gro_head++;
			continue;
		}
		if (len > rte_pktmbuf_tailroom(m)) {
			q->st.rx_dropped++;
		} else {
			memcpy(rte_pktmbuf_mtod(m, void *), src, len);
			m->data_len = (uint16_t)len;
			m->pkt_len = len;
			memcpy(dpq_pkt_meta(m), &s->meta, sizeof(s->meta));
			q->st.rx_bytes += len;
			q->st.rx_pkts++;
			pkts[out++] = m;
			(*used)++;
		}
		s->off += len;
		if (s->off >= s->len)
			q->gro_head++;
	}
	return out;
}

/* With GRO: receive into 64 KB scratch slots, then split each coalesced
 * receive at its gso_size into one mbuf per original datagram (the kernel
 * only coalesces equal-sized datagrams of one flow, the last may be
 * shorter). What does not fit in this burst is kept for the next call. */
static uint16_t
rx_gro(struct udp_driver *ud, struct udp_queue *q,
		struct rte_mbuf **pkts, uint16_t n)
{
	struct rte_mbuf **mb = q->rx_mb;
	uint16_t out = 0, used = 0;
	unsigned int i, vlen;
	uint64_t tsc;
	int r;

	if (n > DPQ_UDP_BURST_MAX)
		n = DPQ_UDP_BURST_MAX;
	if (rte_pktmbuf_alloc_bulk(ud->pool, mb, n) != 0) {
		q->st.alloc_fail++;
		return 0;
	}
	out = gro_drain(q, mb, n, &used, pkts, out, n);
	if (out < n && q->gro_head >= q->gro_count) {
		q->gro_head = q->gro_count = 0;
		vlen = RTE_MIN((unsigned int)(n - out), DPQ_UDP_GRO_SLOTS);
		for (i = 0; i < vlen; i++)
			rx_prepare(q, i, q->gro_buf +
					(size_t)i * DPQ_UDP_GRO_BUF,
					DPQ_UDP_GRO_BUF);
		r = recvmmsg(q->fd, q->rx_msg, vlen, MSG_DONTWAIT, NULL);
		if (r > 0) {
			tsc = rte_rdtsc();
			for (i = 0; i < (unsigned int)r; i++) {
				struct udp_gro_slot *s = &q->gro_slot[i];
				struct msghdr *mh = &q->rx_msg[i].msg_hdr;

				s->len = q->rx_msg[i].msg_len;
				s->off = 0;
				s->skip = false;
				s->seg = rx_parse(ud, mh, &q->rx_name[i],
						&s->meta, tsc);
				if (s->seg != 0)
					q->st.gro_recvs++;
				if (s->seg == 0 || s->seg > s->len)
					s->seg = s->len;
				if (mh->msg_flags & MSG_TRUNC) {
					/* cannot happen with a 64 KB slot;
					 * never deliver a cut datagram */
					q->st.rx_dropped++;
					s->skip = true;
				}
			}
			q->gro_count = (uint16_t)r;
			out = gro_drain(q, mb, n, &used, pkts, out, n);
		} else if (r < 0 && q->recv_err && icmp_errno(errno)) {
			errq_drain(q);
		}
	}
	if (used < n)
		rte_pktmbuf_free_bulk(mb + used, n - used);
	return out;
}

static uint16_t
udp_rx_burst(struct dpq_driver *d, uint16_t queue, struct rte_mbuf **pkts,
		uint16_t n)
{
	struct udp_driver *ud = udp_drv(d);
	struct udp_queue *q;

	if (unlikely(queue >= d->nb_queues || n == 0))
		return 0;
	q = &ud->q[queue];
	if (q->gro)
		return rx_gro(ud, q, pkts, n);
	return rx_direct(ud, q, pkts, n);
}

/* ---- transmit ----------------------------------------------------------- */

/* May b join a's GSO message: same destination, source address and ECN
 * (meta.local's port is not used on transmit). */
static bool
same_flow(const struct dpq_pkt_meta *a, const struct dpq_pkt_meta *b)
{
	if (a->ecn != b->ecn || !dpq_addr_equal(&a->peer, &b->peer) ||
			a->local.family != b->local.family)
		return false;
	if (a->local.family == AF_INET)
		return memcmp(a->local.v4, b->local.v4, 4) == 0;
	if (a->local.family == AF_INET6)
		return memcmp(a->local.v6, b->local.v6, 16) == 0;
	return true;
}

static struct cmsghdr *
ctl_add(struct msghdr *mh, struct cmsghdr *prev, int level, int type,
		const void *data, size_t len)
{
	struct cmsghdr *c;

	/* CMSG_NXTHDR needs msg_controllen to cover the new header */
	c = prev == NULL ? CMSG_FIRSTHDR(mh) : CMSG_NXTHDR(mh, prev);
	c->cmsg_level = level;
	c->cmsg_type = type;
	c->cmsg_len = CMSG_LEN(len);
	memcpy(CMSG_DATA(c), data, len);
	return c;
}

/* Control messages of one transmit message: source address (pktinfo),
 * ECN (TOS / TCLASS) and, last, the GSO segment size. */
static void
tx_ctl(struct udp_queue *q, unsigned int m, int family,
		const struct dpq_pkt_meta *meta, uint16_t gso)
{
	struct msghdr *mh = &q->tx_msg[m].msg_hdr;
	struct cmsghdr *c = NULL;
	size_t len = 0;

	mh->msg_control = q->tx_ctl[m].buf;
	mh->msg_controllen = sizeof(q->tx_ctl[m].buf);
	memset(q->tx_ctl[m].buf, 0, sizeof(q->tx_ctl[m].buf));
	if (meta->local.family == AF_INET) {
		struct in_pktinfo pi;

		memset(&pi, 0, sizeof(pi));
		memcpy(&pi.ipi_spec_dst, meta->local.v4, 4);
		c = ctl_add(mh, c, IPPROTO_IP, IP_PKTINFO, &pi, sizeof(pi));
		len += CMSG_SPACE(sizeof(pi));
	} else if (meta->local.family == AF_INET6) {
		struct in6_pktinfo pi;

		memset(&pi, 0, sizeof(pi));
		memcpy(&pi.ipi6_addr, meta->local.v6, 16);
		c = ctl_add(mh, c, IPPROTO_IPV6, IPV6_PKTINFO, &pi,
				sizeof(pi));
		len += CMSG_SPACE(sizeof(pi));
	}
	if (meta->ecn != 0) {
		int tos = meta->ecn & 0x3;

		if (family == AF_INET)
			c = ctl_add(mh, c, IPPROTO_IP, IP_TOS, &tos,
					sizeof(tos));
		else
			c = ctl_add(mh, c, IPPROTO_IPV6, IPV6_TCLASS, &tos,
					sizeof(tos));
		len += CMSG_SPACE(sizeof(tos));
	}
	q->tx_ctl_noseg[m] = (uint16_t)len;
	if (gso != 0) {
		c = ctl_add(mh, c, IPPROTO_UDP, UDP_SEGMENT, &gso,
				sizeof(gso));
		len += CMSG_SPACE(sizeof(gso));
	}
	mh->msg_controllen = len;
	if (len == 0)
		mh->msg_control = NULL;
}

/* Build up to DPQ_UDP_BURST_MAX messages using up to DPQ_UDP_TX_IOV iovecs
 * from pkts; returns the number of messages, the packets they cover are
 * tx_npkts[0..]. */
static unsigned int
tx_build(struct udp_driver *ud, struct udp_queue *q, struct rte_mbuf **pkts,
		uint16_t n)
{
	unsigned int m = 0, v = 0, i = 0;
	int family = ud->local.family;

	while (i < n && m < DPQ_UDP_BURST_MAX) {
		struct rte_mbuf *p = pkts[i];
		const struct dpq_pkt_meta *meta = dpq_pkt_meta(p);
		struct msghdr *mh = &q->tx_msg[m].msg_hdr;
		struct rte_mbuf *s;
		unsigned int np = 1, first_iov = v;
		uint32_t seg = p->pkt_len, total = p->pkt_len;

		q->tx_bad[m] = false;
		q->tx_npkts[m] = 1;
		q->tx_bytes[m] = p->pkt_len;
		if (meta->peer.family != family ||
				(meta->local.family != 0 &&
				 meta->local.family != family) ||
				p->nb_segs > DPQ_UDP_TX_MAX_SEGS ||
				p->pkt_len > DPQ_UDP_MAX_PAYLOAD) {
			q->tx_bad[m] = true;
			m++;
			i++;
			continue;
		}
		if (v + p->nb_segs > DPQ_UDP_TX_IOV)
			break;	/* next chunk */
		for (s = p; s != NULL; s = s->next) {
			q->tx_iov[v].iov_base = rte_pktmbuf_mtod(s, void *);
			q->tx_iov[v].iov_len = s->data_len;
			v++;
		}
		/* UDP GSO: following datagrams of the same flow and the same
		 * size join this sendmsg, one iovec each (no copy); a shorter
		 * one may end the group (the kernel cuts segments of seg
		 * bytes, so only the last may be short). */
		if (q->gso && p->nb_segs == 1 && seg > 0) {
			while (i + np < n && np < DPQ_UDP_GSO_MAX_SEGS &&
					v < DPQ_UDP_TX_IOV) {
				struct rte_mbuf *p2 = pkts[i + np];

				if (p2->nb_segs != 1 || p2->pkt_len == 0 ||
						p2->pkt_len > seg ||
						total + p2->pkt_len >
						DPQ_UDP_MAX_PAYLOAD ||
						!same_flow(meta,
						dpq_pkt_meta(p2)))
					break;
				q->tx_iov[v].iov_base =
					rte_pktmbuf_mtod(p2, void *);
				q->tx_iov[v].iov_len = p2->data_len;
				v++;
				np++;
				total += p2->pkt_len;
				if (p2->pkt_len < seg)
					break;
			}
		}
		mh->msg_name = &q->tx_name[m];
		mh->msg_namelen = addr_to_sockaddr(&meta->peer, &q->tx_name[m]);
		mh->msg_iov = &q->tx_iov[first_iov];
		mh->msg_iovlen = v - first_iov;
		mh->msg_flags = 0;
		tx_ctl(q, m, family, meta, np > 1 ? (uint16_t)seg : 0);
		q->tx_npkts[m] = (uint16_t)np;
		q->tx_bytes[m] = total;
		i += np;
		m++;
	}
	return m;
}

static bool
tx_would_block(int err)
{
	return err == EAGAIN || err == EWOULDBLOCK || err == ENOBUFS;
}

/* A GSO message the kernel refused (EIO: device without checksum offload,
 * EINVAL: segment larger than the path MTU...): send its datagrams one by
 * one. Returns the packets consumed; *blocked when the socket filled up. */
static unsigned int
tx_unbundle(struct udp_queue *q, unsigned int m, bool *blocked)
{
	struct msghdr one = q->tx_msg[m].msg_hdr;
	unsigned int k, np = q->tx_npkts[m];
	struct iovec *iov = one.msg_iov;

	one.msg_controllen = q->tx_ctl_noseg[m];
	if (one.msg_controllen == 0)
		one.msg_control = NULL;
	one.msg_iovlen = 1;
	for (k = 0; k < np; k++) {
		one.msg_iov = &iov[k];
		if (sendmsg(q->fd, &one, MSG_DONTWAIT) >= 0) {
			q->st.tx_pkts++;
			q->st.tx_bytes += iov[k].iov_len;
		} else if (tx_would_block(errno)) {
			*blocked = true;
			return k;
		} else {
			q->st.tx_dropped++;
		}
	}
	return np;
}

/* Send the built messages; returns the packets consumed (sent or dropped),
 * always a prefix of the burst. */
static unsigned int
tx_send(struct udp_queue *q, unsigned int nmsg, bool *blocked)
{
	unsigned int mi = 0, consumed = 0, j, k;
	int r;

	while (mi < nmsg) {
		if (q->tx_bad[mi]) {
			q->st.tx_dropped++;
			consumed++;
			mi++;
			continue;
		}
		for (j = mi; j < nmsg && !q->tx_bad[j]; j++)
			;
		r = sendmmsg(q->fd, &q->tx_msg[mi], j - mi, MSG_DONTWAIT);
		if (r > 0) {
			for (k = mi; k < mi + (unsigned int)r; k++) {
				q->st.tx_pkts += q->tx_npkts[k];
				q->st.tx_bytes += q->tx_bytes[k];
				if (q->tx_npkts[k] > 1)
					q->st.gso_sends++;
				consumed += q->tx_npkts[k];
			}
			mi += r;
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		if (r == 0 || tx_would_block(errno)) {
			*blocked = true;
			return consumed;
		}
		/* hard error on message mi (EMSGSIZE, ECONNREFUSED from an
		 * earlier ICMP error, EPERM from a firewall...): drop it and
		 * go on, so one bad datagram never stalls the burst */
		if (q->recv_err && icmp_errno(errno))
			q->errq = true;
		if (q->tx_npkts[mi] > 1) {
			unsigned int c;

			if (!q->gso_warned) {
				UDP_LOG(NOTICE, "GSO send refused (%s), "
						"sending datagrams singly\n",
						strerror(errno));
				q->gso_warned = true;
			}
			c = tx_unbundle(q, mi, blocked);
			consumed += c;
			if (*blocked)
				return consumed;
		} else {
			q->st.tx_dropped++;
			consumed++;
		}
		mi++;
	}
	return consumed;
}

static uint16_t
udp_tx_burst(struct dpq_driver *d, uint16_t queue, struct rte_mbuf **pkts,
		uint16_t n)
{
	struct udp_driver *ud = udp_drv(d);
	struct udp_queue *q;
	uint16_t done = 0;
	bool blocked = false;

	if (unlikely(queue >= d->nb_queues))
		return 0;
	q = &ud->q[queue];
	while (done < n && !blocked) {
		unsigned int nmsg = tx_build(ud, q, pkts + done, n - done);
		unsigned int c = tx_send(q, nmsg, &blocked);

		if (c > 0)
			rte_pktmbuf_free_bulk(pkts + done, c);
		done += c;
	}
	return done;
}

/* ---- buffers, address, stats -------------------------------------------- */

static int
udp_alloc_bulk(struct dpq_driver *d, uint16_t queue, struct rte_mbuf **pkts,
		unsigned int n)
{
	struct udp_driver *ud = udp_drv(d);
	unsigned int i;

	if (queue >= d->nb_queues)
		return -EINVAL;
	if (rte_pktmbuf_alloc_bulk(ud->pool, pkts, n) != 0) {
		ud->q[queue].st.alloc_fail++;
		return -ENOMEM;
	}
	for (i = 0; i < n; i++)
		memset(dpq_pkt_meta(pkts[i]), 0, sizeof(struct dpq_pkt_meta));
	return 0;
}

static void
udp_free_bulk(struct dpq_driver *d, struct rte_mbuf **pkts, unsigned int n)
{
	RTE_SET_USED(d);
	rte_pktmbuf_free_bulk(pkts, n);
}

static int
udp_local_addr(const struct dpq_driver *d, struct dpq_addr *out)
{
	*out = ((const struct udp_driver *)d)->local;
	return 0;
}

static void
udp_stats(const struct dpq_driver *d, struct dpq_driver_stats *out)
{
	const struct udp_driver *ud = (const struct udp_driver *)d;
	uint16_t i;

	memset(out, 0, sizeof(*out));
	for (i = 0; i < d->nb_queues; i++) {
		const struct udp_qstats *s = &ud->q[i].st;

		out->rx_pkts += s->rx_pkts;
		out->rx_bytes += s->rx_bytes;
		out->tx_pkts += s->tx_pkts;
		out->tx_bytes += s->tx_bytes;
		out->rx_dropped += s->rx_dropped;
		out->tx_dropped += s->tx_dropped;
		out->alloc_fail += s->alloc_fail;
		out->gso_sends += s->gso_sends;
		out->gro_recvs += s->gro_recvs;
		if (s->icmp_errors > 0) {
			out->icmp_errors += s->icmp_errors;
			out->icmp_errno = s->icmp_errno;
			out->icmp_type = s->icmp_type;
			out->icmp_code = s->icmp_code;
			out->icmp_dst = s->icmp_dst;
			out->icmp_from = s->icmp_from;
		}
	}
}

static int
udp_start(struct dpq_driver *d)
{
	/* the sockets receive from the moment they are bound */
	RTE_SET_USED(d);
	return 0;
}

static void
udp_free(struct udp_driver *ud)
{
	uint16_t i;

	if (ud->q != NULL) {
		for (i = 0; i < ud->base.nb_queues; i++) {
			if (ud->q[i].fd >= 0)
				close(ud->q[i].fd);
			free(ud->q[i].gro_buf);
		}
		free(ud->q);
	}
	rte_mempool_free(ud->pool);
	free(ud);
}

static void
udp_close(struct dpq_driver *d)
{
	udp_free(udp_drv(d));
}

static const struct dpq_driver_ops udp_ops = {
	.name = "udp",
	.start = udp_start,
	.rx_burst = udp_rx_burst,
	.tx_burst = udp_tx_burst,
	.alloc_bulk = udp_alloc_bulk,
	.free_bulk = udp_free_bulk,
	.local_addr = udp_local_addr,
	.stats = udp_stats,
	.close = udp_close,
};

/* ---- open --------------------------------------------------------------- */

static void
sock_bufsize(int fd, int force_opt, int opt)
{
	int v = DPQ_UDP_SOCKBUF;

	/* as root the FORCE variant ignores net.core.[rw]mem_max */
	if (setsockopt(fd, SOL_SOCKET, force_opt, &v, sizeof(v)) != 0)
		(void)setsockopt(fd, SOL_SOCKET, opt, &v, sizeof(v));
}

/* Open, configure and bind the socket of queue qi. Returns 0 or -errno. */
static int
open_socket(struct udp_driver *ud, const struct dpq_udp_conf *conf,
		uint16_t qi)
{
	struct udp_queue *q = &ud->q[qi];
	int family = conf->local.family;
	struct sockaddr_storage ss;
	socklen_t sl;
	int one = 1, zero = 0, pmtu;
	int fd;

	fd = socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
			IPPROTO_UDP);
	if (fd < 0)
		return -errno;
	q->fd = fd;
	if (family == AF_INET6 && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY,
			&one, sizeof(one)) != 0)
		return -errno;
	if (conf->nb_queues > 1 && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT,
			&one, sizeof(one)) != 0)
		return -errno;
	/* RFC 9000 §14: QUIC datagrams must not be fragmented by IP; PROBE
	 * sets DF without letting the kernel's PMTU cache refuse sends
	 * (the transport runs its own path MTU discovery, §14.3). */
	if (family == AF_INET) {
		pmtu = IP_PMTUDISC_PROBE;
		if (setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu,
				sizeof(pmtu)) != 0 ||
				setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &one,
				sizeof(one)) != 0 ||
				setsockopt(fd, IPPROTO_IP, IP_RECVTOS, &one,
				sizeof(one)) != 0)
			return -errno;
	} else {
		pmtu = IPV6_PMTUDISC_PROBE;
		if (setsockopt(fd, IPPROTO_IPV6, IPV6_MTU_DISCOVER, &pmtu,
				sizeof(pmtu)) != 0 ||
				setsockopt(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO,
				&one, sizeof(one)) != 0 ||
				setsockopt(fd, IPPROTO_IPV6, IPV6_RECVTCLASS,
				&one, sizeof(one)) != 0)
			return -errno;
	}
	if (conf->recv_err) {
		if (setsockopt(fd, family == AF_INET ? IPPROTO_IP :
				IPPROTO_IPV6, family == AF_INET ? IP_RECVERR :
				IPV6_RECVERR, &one, sizeof(one)) != 0)
			return -errno;
		q->recv_err = true;
	}
	sock_bufsize(fd, SO_RCVBUFFORCE, SO_RCVBUF);
	sock_bufsize(fd, SO_SNDBUFFORCE, SO_SNDBUF);

	/* the first socket decides an ephemeral port, the others share it */
	sl = addr_to_sockaddr(qi == 0 ? &conf->local : &ud->local, &ss);
	if (bind(fd, (struct sockaddr *)&ss, sl) != 0)
		return -errno;
	if (qi == 0) {
		sl = sizeof(ss);
		if (getsockname(fd, (struct sockaddr *)&ss, &sl) != 0)
			return -errno;
		sockaddr_to_addr(&ss, &ud->local);
	}

	/* Feature detection: a kernel without UDP GSO / GRO refuses the
	 * option; fall back to one datagram per message. */
	if (conf->gso) {
		if (setsockopt(fd, IPPROTO_UDP, UDP_SEGMENT, &zero,
				sizeof(zero)) == 0)
			q->gso = true;
		else if (qi == 0)
			UDP_LOG(NOTICE, "UDP GSO not available (%s)\n",
					strerror(errno));
	}
	if (conf->gro) {
		if (setsockopt(fd, IPPROTO_UDP, UDP_GRO, &one,
				sizeof(one)) == 0) {
			q->gro_buf = malloc((size_t)DPQ_UDP_GRO_SLOTS *
					DPQ_UDP_GRO_BUF);
			if (q->gro_buf == NULL)
				return -ENOMEM;
			q->gro = true;
		} else if (qi == 0) {
			UDP_LOG(NOTICE, "UDP GRO not available (%s)\n",
					strerror(errno));
		}
	}
	return 0;
}

struct dpq_driver *
dpq_driver_udp_open(const struct dpq_udp_conf *conf)
{
	static atomic_uint pool_seq;
	char name[RTE_MEMPOOL_NAMESIZE];
	struct udp_driver *ud;
	uint16_t nq, i;
	uint32_t nb_mbufs;
	unsigned int cache;
	int rc;

	if (conf == NULL || (conf->local.family != AF_INET &&
			conf->local.family != AF_INET6) ||
			conf->nb_queues > DPQ_UDP_MAX_QUEUES) {
		errno = EINVAL;
		return NULL;
	}
	nq = conf->nb_queues == 0 ? 1 : conf->nb_queues;
	nb_mbufs = conf->nb_mbufs == 0 ? DPQ_UDP_DEFAULT_MBUFS : conf->nb_mbufs;
	if (nb_mbufs < 2 * DPQ_UDP_BURST_MAX) {
		errno = EINVAL;
		return NULL;
	}

	ud = calloc(1, sizeof(*ud));
	if (ud == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	ud->base.ops = &udp_ops;
	ud->base.nb_queues = nq;
	ud->conf = *conf;
	if (posix_memalign((void **)&ud->q, RTE_CACHE_LINE_SIZE,
			sizeof(*ud->q) * nq) != 0) {
		free(ud);
		errno = ENOMEM;
		return NULL;
	}
	memset(ud->q, 0, sizeof(*ud->q) * nq);
	for (i = 0; i < nq; i++)
		ud->q[i].fd = -1;

	/* mempool caches may hold up to 1.5x their size beyond the limit */
	cache = RTE_MIN((unsigned int)DPQ_UDP_MBUF_CACHE, nb_mbufs / 4);
	snprintf(name, sizeof(name), "dpq_udp_%u",
			atomic_fetch_add(&pool_seq, 1));
	ud->pool = rte_pktmbuf_pool_create(name, nb_mbufs, cache,
			DPQ_PKT_PRIV_SIZE, RTE_MBUF_DEFAULT_BUF_SIZE,
			conf->socket_id < 0 ? SOCKET_ID_ANY : conf->socket_id);
	if (ud->pool == NULL) {
		rc = rte_errno != 0 ? rte_errno : ENOMEM;
		UDP_LOG(ERR, "mbuf pool: %s\n", rte_strerror(rc));
		udp_free(ud);
		errno = rc;
		return NULL;
	}
	for (i = 0; i < nq; i++) {
		rc = open_socket(ud, conf, i);
		if (rc != 0) {
			char buf[64];

			/* INFO: errno tells the caller, who may retry (an
			 * address not configured yet) and reports itself */
			UDP_LOG(INFO, "socket %u on %s: %s\n", i,
					dpq_addr_format(&conf->local, buf,
					sizeof(buf)), strerror(-rc));
			udp_free(ud);
			errno = -rc;
			return NULL;
		}
	}
	return &ud->base;
}

int
dpq_driver_udp_rebind(struct dpq_driver *d, const struct dpq_addr *local,
		struct dpq_addr *bound)
{
	struct udp_driver *ud;
	struct dpq_udp_conf conf;
	struct dpq_addr old_local;
	struct udp_queue *q;
	uint8_t *old_gro_buf;
	bool old_gso, old_gro;
	int old_fd, rc;

	if (d == NULL || d->ops != &udp_ops || local == NULL)
		return -EINVAL;
	ud = udp_drv(d);
	if (d->nb_queues != 1 || local->family != ud->local.family)
		return -EINVAL;
	q = &ud->q[0];
	conf = ud->conf;
	conf.local = *local;
	old_fd = q->fd;
	old_gro_buf = q->gro_buf;
	old_gso = q->gso;
	old_gro = q->gro;
	old_local = ud->local;
	q->fd = -1;
	q->gro_buf = NULL;
	q->gso = q->gro = false;
	rc = open_socket(ud, &conf, 0);
	if (rc != 0) {
		if (q->fd >= 0)
			close(q->fd);
		free(q->gro_buf);
		q->fd = old_fd;
		q->gro_buf = old_gro_buf;
		q->gso = old_gso;
		q->gro = old_gro;
		ud->local = old_local;
		return rc;
	}
	/* The old address is given up, with what it still held. */
	close(old_fd);
	free(old_gro_buf);
	q->gro_head = q->gro_count = 0;
	if (bound != NULL)
		*bound = ud->local;
	return 0;
}
