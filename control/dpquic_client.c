/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpquic-client: fetch files from an hq-interop (HTTP/0.9 over QUIC)
 * server, all paths concurrently on one connection.
 *
 *   dpquic-client [EAL args --] [options] IP:PORT PATH...
 *     --dpdk LOCAL_IP     use the DPDK port (EAL args) instead of kernel UDP
 *     --prefix LEN --gateway IP   DPDK addressing
 *     --out DIR           write each file to DIR/basename
 *     --sha256            print "sha256 HEX PATH" per file
 *     --ciphers NAME      AES-128-GCM | AES-256-GCM | CHACHA20-POLY1305
 *     --alpn NAME         (hq-interop)
 *     --keylog FILE       NSS key log (created 0600; SSLKEYLOGFILE is
 *                         ignored: secrets go only where asked)
 *     --timeout S         give up after S seconds (30)
 *     --verify [--ca F]   verify the server certificate (off by default:
 *                         dpquicd's default certificate is self-signed)
 *     --cache FILE        keep what makes the next connection to the same
 *                         server faster: session ticket, NEW_TOKEN token,
 *                         the server's transport parameters (created 0600;
 *                         a damaged file only costs a full handshake)
 *     --no-0rtt           resume from the cache but send no 0-RTT data
 *     --key-update N      start a 1-RTT key update (RFC 9001 §6) every N
 *                         packets sent (0, the default: only before the
 *                         AEAD's limit)
 *     --key-update-gap S  least time between two updates we start (1 s;
 *                         never less than three PTOs, RFC 9001 §6.5)
 *     --fec POLICY        XOR-FEC (docs/fec.md) for what this client sends:
 *                         off | fixed[:K] | adaptive[:MIN-MAX] (default:
 *                         off); the extension is offered either way
 *                         (repairs from the server are used); "none": do
 *                         not offer it at all
 *     --spec LIST         speculative retransmission: send these datagrams
 *                         twice, spaced: off | all | handshake,tail,repair
 *                         (default: handshake,repair)
 *     --migrate-after N   once N bytes of responses arrived, move the
 *                         connection to a new UDP socket (a new port, or
 *                         --migrate-addr's address): RFC 9000 §9.2 active
 *                         migration with a fresh connection ID; kernel
 *                         UDP only
 *     --migrate-addr IP   the local address to move to (default: the
 *                         same address, a new port)
 *     --no-gso            no UDP GSO: one sendmsg per datagram (a stateless
 *                         nftables NAT on the sending host rewrites the
 *                         ports of a GSO super-datagram without fixing the
 *                         segments' UDP checksums; tests/e2e)
 *
 * Prints the handshake time, bytes and goodput, the time to the first
 * response byte, whether the session was resumed and what became of 0-RTT
 * ("session resumed 0rtt accepted"). Exit status 0 when every
 * file arrived complete, 1 otherwise, 2 for usage errors. The handshake
 * runs in this thread (hs_direct): a client has no dataplane cores to
 * protect.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_cycles.h>
#include <rte_errno.h>

#include "control/conf/conf.h"
#include "control/client/cache.h"
#include "control/tls/hs_direct.h"
#include "dataplane/engine/cc.h"
#include "dataplane/engine/errors.h"
#include "dataplane/app/hq_client.h"
#include "dataplane/shard/shard.h"
#include "dpquic/driver.h"

static volatile sig_atomic_t stop;

static void
on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void
usage(FILE *f)
{
	fprintf(f,
		"usage: dpquic-client [EAL args --] [options] IP:PORT PATH...\n"
		"  --dpdk LOCAL_IP  --prefix LEN  --gateway IP  --port-id P\n"
		"  --out DIR  --sha256  --ciphers NAME  --alpn NAME\n"
		"  --keylog FILE  --timeout S  --verify [--ca FILE]\n"
		"  --cache FILE     session ticket, token and server parameters\n"
		"                   for the next connection (resumption, 0-RTT)\n"
		"  --no-0rtt        resume from the cache without 0-RTT data\n"
		"  --key-update N   start a key update every N packets\n"
		"  --key-update-gap S  at least S seconds between two (1)\n"
		"  --fec POLICY     XOR-FEC for what we send: off | fixed[:K] |\n"
		"                   adaptive[:MIN-MAX] (off); none: do not\n"
		"                   offer the extension\n"
		"  --fec-cc REACTION  congestion response to packets the\n"
		"                   server rebuilt: guarded (default) | loss\n"
		"  --spec LIST      send twice (spaced): off | all | "
		"handshake,tail,repair\n"
		"                   (handshake,repair)\n"
		"  --cc NAME        congestion controller: newreno (default), "
		"cubic, bbr\n"
		"  --no-pacing      send as the window allows, unpaced\n"
		"  --migrate-after N  move to a new socket (new port) after N\n"
		"                   bytes of responses (kernel UDP only)\n"
		"  --migrate-addr IP  ... bound to this local address\n"
		"  --no-gso         send each datagram in its own sendmsg (no\n"
		"                   UDP GSO; kernel UDP only)\n");
}

/* ---- the hq-interop client's sinks ------------------------------------ */

struct fetch {
	const char *out_dir;
	char **paths;
	FILE **files;
	uint64_t *got;		/* body bytes arrived, per path */
	unsigned int n;
	bool sha256;
};

static void
on_body(void *arg, unsigned int idx, const uint8_t *data, size_t len)
{
	struct fetch *f = arg;

	f->got[idx] += len;
	if (f->out_dir == NULL)
		return;
	if (f->files[idx] == NULL) {
		char path[4096];
		const char *base = strrchr(f->paths[idx], '/');

		snprintf(path, sizeof(path), "%s/%s", f->out_dir,
				base && base[1] ? base + 1 : "index");
		f->files[idx] = fopen(path, "w");
		if (f->files[idx] == NULL) {
			fprintf(stderr, "dpquic-client: %s: %s\n", path,
					strerror(errno));
			f->out_dir = NULL;
			return;
		}
	}
	fwrite(data, 1, len, f->files[idx]);
}

static uint64_t
clock_us(void *arg)
{
	(void)arg;
	return dpq_shard_now_us();
}

/* How the connection ended, caught as it happens: a close that ends a
 * connection at once (idle timeout, version negotiation, no viable
 * path) frees it within the same poll, so asking its state afterwards
 * would find nothing to report. */
static struct dpq_conn_close_info close_info;
static bool closed;

static void
on_closed(struct dpq_conn *c)
{
	if (!closed) {
		closed = true;
		close_info = *dpq_conn_close_info(c);
	}
	dpq_hq_client_ops.on_closed(c);
}

static struct dpq_app_ops client_ops;

static void *
client_ctx(void *arg, struct dpq_conn *c)
{
	(void)c;
	return arg;
}

static const char *
status_str(enum dpq_hq_status st)
{
	switch (st) {
	case DPQ_HQ_OK: return "ok";
	case DPQ_HQ_RESET: return "reset";
	case DPQ_HQ_ABORTED: return "aborted";
	default: return "failed";
	}
}

/* Print per-file results and totals; true when every file is complete. */
static bool
report(struct dpq_hq_client *hc, struct fetch *f,
		const struct dpq_conn_stats *cs, uint64_t t0, uint64_t t_end)
{
	uint64_t bytes = 0, first = UINT64_MAX, last = 0;
	unsigned int i, ok = 0;
	double secs;

	for (i = 0; i < f->n; i++) {
		const struct dpq_hq_result *r = dpq_hq_client_result(hc, i);

		if (f->files[i] != NULL)
			fclose(f->files[i]);
		if (r == NULL) {
			/* Never finished (timeout, connection gone): say
			 * how much arrived. */
			printf("file %s bytes %lu incomplete\n", f->paths[i],
				(unsigned long)f->got[i]);
			continue;
		}
		bytes += r->bytes;
		if (r->t_start && r->t_start < first)
			first = r->t_start;
		if (r->t_done > last)
			last = r->t_done;
		if (r->status == DPQ_HQ_OK)
			ok++;
		if (r->has_sha256 && f->sha256) {
			printf("sha256 ");
			for (int k = 0; k < 32; k++)
				printf("%02x", r->sha256[k]);
			printf(" %s\n", f->paths[i]);
		}
		printf("file %s bytes %lu %s", f->paths[i],
				(unsigned long)r->bytes, status_str(r->status));
		if (r->status == DPQ_HQ_RESET)
			printf(" 0x%lx", (unsigned long)r->app_error);
		printf("\n");
	}
	if (first == UINT64_MAX)
		first = t0;
	if (last < first)
		last = t_end;
	secs = (double)(last - first) / 1e6;
	/* Without a handshake there is no cipher, and the RTT is only the
	 * initial guess (RFC 9002 §6.2.2: 333 ms): not a measurement. */
	if (cs->handshake_us == 0)
		printf("handshake_ms none cipher none srtt_ms none\n");
	else
		printf("handshake_ms %.3f cipher 0x%04x srtt_ms %.3f\n",
			(double)cs->handshake_us / 1e3, cs->cipher_suite,
			(double)cs->srtt_us / 1e3);
	printf("total_bytes %lu transfer_ms %.3f goodput_gbps %.3f "
		"packets_sent %lu packets_recv %lu lost %lu\n",
		(unsigned long)bytes, secs * 1e3,
		secs > 0 ? (double)bytes * 8 / secs / 1e9 : 0.0,
		(unsigned long)cs->pkts_sent, (unsigned long)cs->pkts_recv,
		(unsigned long)cs->pkts_lost);
	printf("key_updates %lu by_peer %lu\n",
		(unsigned long)cs->key_updates,
		(unsigned long)cs->key_updates_peer);
	printf("cc %s state %s cwnd %lu pacing_mbps %.1f ptos %lu "
		"spurious %lu undos %lu persistent %lu\n", cs->cc,
		cs->cc_state, (unsigned long)cs->cwnd,
		(double)cs->pacing_rate * 8 / 1e6, (unsigned long)cs->ptos,
		(unsigned long)cs->spurious_losses,
		(unsigned long)cs->cc_undos,
		(unsigned long)cs->persistent_congestions);
	if (cs->spec_sent != 0)
		printf("spec copies_sent %lu dropped %lu\n",
			(unsigned long)cs->spec_sent,
			(unsigned long)cs->spec_dropped);
	{
		static const char *const early[] = { "none", "sent",
			"accepted", "rejected" };
		const struct dpq_hq_result *r0 = dpq_hq_client_result(hc, 0);

		/* Time to the first response byte, from the connection's
		 * start (the bench's figure). */
		if (r0 != NULL && r0->t_first_byte >= cs->created_us &&
		    cs->created_us != 0)
			printf("first_byte_ms %.3f\n",
				(double)(r0->t_first_byte - cs->created_us) /
				1e3);
		printf("session %s 0rtt %s early_bytes %lu\n",
			cs->resumed ? "resumed" : "full",
			early[cs->early & 3],
			(unsigned long)cs->early_bytes);
	}
	if (cs->fec_on)
		printf("fec rebuilt %lu unrecoverable %lu repairs_sent %lu "
			"repair_bytes %lu\n",
			(unsigned long)cs->fec_recovered,
			(unsigned long)cs->fec_unrecoverable,
			(unsigned long)cs->fec_groups,
			(unsigned long)cs->fec_repair_bytes);
	if (cs->migrations > 0 || cs->paths_validated > 0)
		printf("migrations %lu paths_validated %lu paths_failed %lu "
			"cids_issued %lu cids_retired %lu\n",
			(unsigned long)cs->migrations,
			(unsigned long)cs->paths_validated,
			(unsigned long)cs->paths_failed,
			(unsigned long)cs->cids_issued,
			(unsigned long)cs->cids_retired);
	printf("files_ok %u/%u\n", ok, f->n);
	return ok == f->n;
}

/* TLS alert names (RFC 8446 §6) and what a user can do about some. */
static const char *
alert_name(unsigned int a)
{
	switch (a) {
	case 10: return "unexpected_message";
	case 20: return "bad_record_mac";
	case 40: return "handshake_failure";
	case 42: return "bad_certificate";
	case 43: return "unsupported_certificate";
	case 44: return "certificate_revoked";
	case 45: return "certificate_expired";
	case 46: return "certificate_unknown";
	case 47: return "illegal_parameter";
	case 48: return "unknown_ca";
	case 49: return "access_denied";
	case 50: return "decode_error";
	case 51: return "decrypt_error";
	case 70: return "protocol_version";
	case 71: return "insufficient_security";
	case 80: return "internal_error";
	case 90: return "user_canceled";
	case 109: return "missing_extension";
	case 110: return "unsupported_extension";
	case 112: return "unrecognized_name";
	case 116: return "certificate_required";
	case 120: return "no_application_protocol";
	default: return "unknown alert";
	}
}

static const char *
alert_hint(unsigned int a, bool remote, const char *alpn)
{
	static char buf[160];

	if (a == 120) {
		snprintf(buf, sizeof(buf), " (the server does not speak ALPN "
			"\"%s\": try --alpn with one it offers)", alpn);
		return buf;
	}
	if (!remote && (a == 42 || a == 43 || a == 44 || a == 45 ||
			a == 46 || a == 48))
		return " (the server's certificate did not verify: give its "
			"CA with --ca FILE, check the name, or leave out "
			"--verify)";
	if (!remote && a == 40)
		return " (no cipher suite in common: check --ciphers)";
	return "";
}

/* Why the connection ended, in words: who closed it, the code's name
 * and the peer's reason phrase (RFC 9000 §19.19, §20). */
static void
report_close(const struct dpq_conn_close_info *ci, const char *alpn)
{
	const char *who = ci->remote ? "the server closed the connection" :
		"the connection was closed";
	const char *hint = "";
	char code[96];

	if (ci->idle) {
		fprintf(stderr, "dpquic-client: the connection timed out (no "
			"packet from the server within the idle timeout)\n");
		return;
	}
	if (ci->app)
		snprintf(code, sizeof(code), "application error 0x%llx",
			(unsigned long long)ci->error_code);
	else if (ci->error_code >= 0x100 && ci->error_code <= 0x1ff) {
		unsigned int a = (unsigned int)(ci->error_code - 0x100);

		/* RFC 9001 §4.8: CRYPTO_ERROR carries the TLS alert */
		snprintf(code, sizeof(code), "TLS alert %u %s (CRYPTO_ERROR "
			"0x%llx)", a, alert_name(a),
			(unsigned long long)ci->error_code);
		hint = alert_hint(a, ci->remote, alpn);
		if (!ci->remote)
			who = "the handshake failed here";
	} else
		snprintf(code, sizeof(code), "%s (0x%llx)",
			dpq_transport_error_str(ci->error_code),
			(unsigned long long)ci->error_code);
	fprintf(stderr, "dpquic-client: %s: %s%s%s%s%s\n", who, code,
		ci->reason[0] ? ": \"" : "", ci->reason,
		ci->reason[0] ? "\"" : "", hint);
}

/*
 * An ICMP error about our datagrams (kernel UDP, IP_RECVERR). Before the
 * server answered anything, "port unreachable" or "host unreachable"
 * means there is no server to wait for: say so and stop (true). ICMP is
 * unauthenticated (RFC 9000 §14.2.1 is careful with it): once the server
 * has answered, an error is only reported.
 */
static bool
icmp_check(struct dpq_driver *drv, uint64_t *seen, uint64_t pkts_recv)
{
	struct dpq_driver_stats ds;
	char dst[64], from[64];
	const char *what;

	dpq_driver_stats(drv, &ds);
	if (ds.icmp_errors == *seen)
		return false;
	*seen = ds.icmp_errors;
	dpq_addr_format(&ds.icmp_dst, dst, sizeof(dst));
	dpq_addr_format(&ds.icmp_from, from, sizeof(from));
	/* the reporting router or host: its address, no port */
	if (ds.icmp_from.port == 0 && strlen(from) > 2 &&
	    strcmp(from + strlen(from) - 2, ":0") == 0) {
		from[strlen(from) - 2] = '\0';
		if (from[0] == '[' && from[strlen(from) - 1] == ']') {
			memmove(from, from + 1, strlen(from));
			from[strlen(from) - 1] = '\0';
		}
	}
	what = ds.icmp_errno == ECONNREFUSED ? "port unreachable: no server "
		"listens on that UDP port" : strerror(ds.icmp_errno);
	fprintf(stderr, "dpquic-client: ICMP %s (type %u code %u) from %s for "
		"%s%s\n", what, ds.icmp_type, ds.icmp_code, from, dst,
		pkts_recv == 0 ? "" : "; the connection goes on");
	return pkts_recv == 0;
}

/* What the next connection remembers (--cache). */
struct resume {
	struct dpq_tls_ctx *tls;
	struct dpq_cache *cache;	/* NULL: no --cache */
	struct dpq_cache_entry *ent;	/* this server's, being updated */
	bool found;			/* the cache had an entry */
	bool new_ticket;		/* a NewSessionTicket arrived */
	struct dpq_tls_session_opts so;
};

static void
on_ticket(void *arg, struct dpq_conn *c, const uint8_t *data, size_t len,
		bool early)
{
	struct resume *r = arg;

	(void)c;
	if (r->ent == NULL || len > sizeof(r->ent->ticket))
		return;
	memcpy(r->ent->ticket, data, len);
	r->ent->ticket_len = len;
	r->ent->early = early;
	r->new_ticket = true;
}

static int
hs_attach(void *arg, struct dpq_conn *c, uint64_t handle)
{
	struct resume *r = arg;
	struct dpq_hs_direct_opts o = {
		.session = r->found ? &r->so : NULL,
		.on_ticket = on_ticket,
		.arg = r,
	};

	(void)handle;
	return dpq_hs_direct_attach_opts(r->tls, c, r->cache ? &o : NULL);
}

/* The cache entry of server (key "IP:PORT" and ALPN): what to resume with
 * and, for 0-RTT, the remembered parameters. */
static int
resume_start(struct resume *r, const char *path, const char *server,
		const char *alpn, bool no_early, struct dpq_shard_connect_opts *co)
{
	const struct dpq_cache_entry *e;
	struct dpq_cache_stats st;
	int rc;

	r->ent = calloc(1, sizeof(*r->ent));
	if (r->ent == NULL)
		return -ENOMEM;
	rc = dpq_cache_load(path, (uint64_t)time(NULL), &r->cache, &st);
	if (rc != 0) {
		fprintf(stderr, "dpquic-client: --cache %s: %s (going on "
			"without it)\n", path, strerror(-rc));
		return rc;
	}
	if (st.damaged > 0)
		fprintf(stderr, "dpquic-client: --cache %s: %u damaged "
			"entr%s ignored\n", path, st.damaged,
			st.damaged == 1 ? "y" : "ies");
	e = dpq_cache_find(r->cache, server, alpn);
	if (e != NULL) {
		*r->ent = *e;
		r->found = e->ticket_len > 0;
		r->so.session = r->ent->ticket;
		r->so.session_len = r->ent->ticket_len;
		/* 0-RTT needs the ticket's permission and the parameters
		 * that bound it (RFC 9000 §7.4.1). */
		r->so.offer_early_data = !no_early && e->early &&
			e->tp_len > 0;
		if (r->so.offer_early_data) {
			co->remembered_tp = r->ent->tp;
			co->remembered_tp_len = (uint16_t)r->ent->tp_len;
		}
		/* RFC 9000 §8.1.3: the token for this server's Initial. */
		co->token = e->token_len ? r->ent->token : NULL;
		co->token_len = (uint16_t)e->token_len;
	}
	snprintf(r->ent->server, sizeof(r->ent->server), "%s", server);
	snprintf(r->ent->alpn, sizeof(r->ent->alpn), "%s", alpn);
	return 0;
}

/* After the fetch: the new ticket, token and parameters into the file. A
 * NEW_TOKEN token serves once (§8.1.4): the one used goes. */
static void
resume_finish(struct resume *r, const char *path, struct dpq_conn *c)
{
	const uint8_t *tok;
	size_t n;
	ssize_t tp;
	int rc;

	if (r->cache == NULL || r->ent == NULL)
		return;
	r->ent->token_len = 0;
	if (c != NULL) {
		n = dpq_conn_new_token(c, &tok);
		if (n > 0 && n <= sizeof(r->ent->token)) {
			memcpy(r->ent->token, tok, n);
			r->ent->token_len = n;
		}
		tp = dpq_conn_remembered_tparams(c, r->ent->tp,
				sizeof(r->ent->tp));
		if (tp > 0)
			r->ent->tp_len = (size_t)tp;
	}
	if (!r->new_ticket && !r->found)
		r->ent->ticket_len = 0;
	if (r->ent->ticket_len == 0 && r->ent->token_len == 0) {
		dpq_cache_drop(r->cache, r->ent->server, r->ent->alpn);
	} else {
		r->ent->saved = (uint64_t)time(NULL);
		dpq_cache_put(r->cache, r->ent);
	}
	rc = dpq_cache_save(r->cache, path);
	if (rc != 0)
		fprintf(stderr, "dpquic-client: --cache %s: cannot write: %s\n",
			path, strerror(-rc));
}

static uint16_t
suite_by_name(const char *n)
{
	if (strcasecmp(n, "AES-128-GCM") == 0)
		return DPQ_TLS_AES_128_GCM_SHA256;
	if (strcasecmp(n, "AES-256-GCM") == 0)
		return DPQ_TLS_AES_256_GCM_SHA384;
	if (strcasecmp(n, "CHACHA20-POLY1305") == 0)
		return DPQ_TLS_CHACHA20_POLY1305_SHA256;
	return 0;
}

/* RFC 9000 §9.2: rebind the UDP socket (a new port, or addr's address)
 * and move the connection there. Returns 0, -EAGAIN (not possible yet:
 * try later) or another -errno (give up). */
static int
migrate(struct dpq_driver *drv, struct dpq_conn *conn, const char *addr,
		uint64_t now)
{
	const struct dpq_tuple *cur = dpq_conn_active_tuple(conn);
	struct dpq_addr want = { 0 }, bound, before;
	struct dpq_tuple t;
	char b1[64], b2[64];
	int rc;

	rc = dpq_conn_migrate_check(conn);
	if (rc != 0)
		return rc;
	if (addr != NULL) {
		if (dpq_addr_parse(addr, &want) != 0)
			return -EINVAL;
	} else if (cur->local.family != 0) {
		memcpy(&want, &cur->local, sizeof(want));
	} else if (dpq_driver_local_addr(drv, &want) != 0) {
		return -EINVAL;
	}
	want.port = 0;
	if (dpq_driver_local_addr(drv, &before) != 0)
		memset(&before, 0, sizeof(before));
	if (cur->local.family != 0)
		memcpy(&before, &cur->local, sizeof(before));
	rc = dpq_driver_udp_rebind(drv, &want, &bound);
	if (rc != 0)
		return rc;
	memcpy(&t.local, &bound, sizeof(t.local));
	t.peer = cur->peer;
	rc = dpq_conn_migrate(conn, &t, now);
	if (rc == 0)
		fprintf(stderr, "dpquic-client: migrated from %s to %s\n",
				dpq_addr_format(&before, b1, sizeof(b1)),
				dpq_addr_format(&bound, b2, sizeof(b2)));
	return rc;
}

/* Does argv hold EAL args (a "--" separator before the options)? */
static bool
has_eal_args(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--") == 0)
			return true;
	return false;
}

/* --timeout ran out: say how far the connection got and what to try. */
static void
timeout_say(struct dpq_shard *shard, uint64_t handle,
		const struct dpq_addr *server, double timeout)
{
	struct dpq_conn *c = dpq_shard_conn_by_handle(shard, handle);
	struct dpq_conn_stats st;
	char a[64];

	dpq_addr_format(server, a, sizeof(a));
	if (c == NULL) {
		fprintf(stderr, "dpquic-client: timeout after %.1f s\n",
			timeout);
		return;
	}
	dpq_conn_get_stats(c, &st);
	if (st.pkts_recv == 0)
		fprintf(stderr, "dpquic-client: timeout after %.1f s: no "
			"answer from %s (is a QUIC server listening there, "
			"and does UDP reach it?)\n", timeout, a);
	else if (dpq_conn_state(c) < DPQ_CONN_ESTABLISHED)
		fprintf(stderr, "dpquic-client: timeout after %.1f s: the "
			"handshake with %s did not complete (%" PRIu64
			" packets received)\n", timeout, a, st.pkts_recv);
	else
		fprintf(stderr, "dpquic-client: timeout after %.1f s before "
			"every file arrived (--timeout S waits longer)\n",
			timeout);
}

int
main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "dpdk", required_argument, NULL, 'D' },
		{ "prefix", required_argument, NULL, 'P' },
		{ "gateway", required_argument, NULL, 'g' },
		{ "port-id", required_argument, NULL, 'p' },
		{ "out", required_argument, NULL, 'o' },
		{ "sha256", no_argument, NULL, 's' },
		{ "ciphers", required_argument, NULL, 'c' },
		{ "alpn", required_argument, NULL, 'a' },
		{ "keylog", required_argument, NULL, 'K' },
		{ "timeout", required_argument, NULL, 't' },
		{ "verify", no_argument, NULL, 'v' },
		{ "ca", required_argument, NULL, 'C' },
		{ "key-update", required_argument, NULL, 'U' },
		{ "fec", required_argument, NULL, 'F' },
		{ "spec", required_argument, NULL, 'S' },
		{ "fec-cc", required_argument, NULL, 'B' },
		{ "cc", required_argument, NULL, 'x' },
		{ "no-pacing", no_argument, NULL, 'N' },
		{ "idle-timeout", required_argument, NULL, 'I' },
		{ "key-update-gap", required_argument, NULL, 'G' },
		{ "migrate-after", required_argument, NULL, 'M' },
		{ "migrate-addr", required_argument, NULL, 'A' },
		{ "cache", required_argument, NULL, 'Y' },
		{ "no-0rtt", no_argument, NULL, 'Z' },
		{ "no-gso", no_argument, NULL, 'W' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	char *default_eal[] = { argv[0], "--no-huge", "--no-shconf",
		"--no-pci", "-m", "256", "--log-level=error", "--no-telemetry",
		NULL };
	struct dpq_tls_ctx_conf tc = { 0 };
	struct dpq_shard_conf sc = { 0 };
	struct dpq_hq_client_conf hq = { 0 };
	struct dpq_conn_stats cstats = { 0 };
	struct fetch fetch = { 0 };
	struct dpq_tls_ctx *tls = NULL;
	struct dpq_driver *drv = NULL;
	struct dpq_shard *shard = NULL;
	struct dpq_hq_client *hc = NULL;
	struct dpq_conn *conn = NULL;
	struct dpq_addr server, local = { 0 }, gateway = { 0 };
	const char *alpn = "hq-interop", *dpdk_ip = NULL;
	uint16_t suite = 0, port_id = 0;
	uint8_t prefix = 0;
	double timeout = 30;
	uint64_t t0, deadline, handle, key_update = 0, idle_ms = 0, num;
	uint64_t icmp_at = 0, icmp_seen = 0;
	uint64_t key_update_gap_us = 0;
	uint64_t migrate_after = 0;
	const char *migrate_addr = NULL;
	bool migrate_pending = false;
	/* Offer the extension, send no repairs (a client mostly receives;
	 * dpquicd sends adaptively), send the handshake flight twice, and
	 * REPAIR datagrams when --fec turns repairs on (docs/fec.md §13). */
	struct dpq_fec_policy fec = { DPQ_FEC_OFF, DPQ_FEC_DEFAULT_GROUP,
		DPQ_FEC_DEFAULT_GROUP_MIN };
	uint8_t fec_max_group = DPQ_FEC_GROUP_LIMIT,
		spec = DPQ_SPEC_HANDSHAKE | DPQ_SPEC_REPAIR;
	const char *cc_name = NULL;
	enum dpq_cc_fec_reaction fec_cc = DPQ_CC_FEC_GUARDED;
	bool no_pacing = false;
	char *end;
	struct dpq_shard_connect_opts copts = { 0 };
	struct resume resume = { 0 };
	const char *cache_path = NULL;
	bool no_early = false, no_gso = false;
	int c, n, rc = 1;

	if (has_eal_args(argc, argv)) {
		n = rte_eal_init(argc, argv);
	} else {
		/* No dataplane core of its own: EAL pins the main lcore to
		 * the first CPU, where every such client would then crowd;
		 * give the thread back the CPUs it had. */
		cpu_set_t cpus;
		bool have = sched_getaffinity(0, sizeof(cpus), &cpus) == 0;

		n = rte_eal_init(8, default_eal);
		n = n < 0 ? n : 0;
		if (n == 0 && have)
			(void)sched_setaffinity(0, sizeof(cpus), &cpus);
	}
	if (n < 0) {
		fprintf(stderr, "dpquic-client: EAL init failed: %s\n",
				rte_strerror(rte_errno));
		return 2;
	}
	argc -= n;
	argv += n;
	tc.role = DPQ_TLS_CLIENT;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'D': dpdk_ip = optarg; break;
		case 'P':
			if (dpq_conf_parse_u64(optarg, &num) != 0 ||
			    num > 128) {
				fprintf(stderr, "dpquic-client: --prefix wants "
					"a prefix length 0..128, not '%s'\n",
					optarg);
				return 2;
			}
			prefix = (uint8_t)num;
			break;
		case 'g':
			if (dpq_addr_parse(optarg, &gateway) != 0) {
				usage(stderr);
				return 2;
			}
			break;
		case 'p':
			if (dpq_conf_parse_u64(optarg, &num) != 0 ||
			    num >= RTE_MAX_ETHPORTS) {
				fprintf(stderr, "dpquic-client: --port-id wants "
					"a DPDK port number, not '%s'\n",
					optarg);
				return 2;
			}
			port_id = (uint16_t)num;
			break;
		case 'o': fetch.out_dir = optarg; break;
		case 's': hq.sha256 = fetch.sha256 = true; break;
		case 'c':
			suite = suite_by_name(optarg);
			if (suite == 0) {
				fprintf(stderr, "dpquic-client: unknown cipher "
					"%s\n", optarg);
				return 2;
			}
			break;
		case 'a': alpn = optarg; break;
		case 'Y': cache_path = optarg; break;
		case 'Z': no_early = true; break;
		case 'W': no_gso = true; break;
		case 'K': tc.keylog_file = optarg; break;
		case 't':
			if (dpq_conf_parse_seconds(optarg, &timeout) != 0 ||
			    timeout <= 0) {
				fprintf(stderr, "dpquic-client: --timeout wants "
					"seconds (> 0), not '%s'\n", optarg);
				return 2;
			}
			break;
		case 'v': tc.verify = true; break;
		case 'C': tc.ca_file = optarg; break;
		case 'U':
			errno = 0;
			key_update = strtoull(optarg, &end, 10);
			if (errno != 0 || *end != '\0' || optarg[0] == '-' ||
			    optarg[0] == '\0') {
				fprintf(stderr, "dpquic-client: --key-update "
					"wants a packet count, not '%s'\n",
					optarg);
				return 2;
			}
			break;
		case 'F':
			if (strcmp(optarg, "none") == 0) {
				fec_max_group = 0;
				fec.mode = DPQ_FEC_OFF;
			} else if (dpq_fec_policy_parse(optarg, &fec) != 0) {
				fprintf(stderr, "dpquic-client: --fec '%s': "
					"expected off, fixed[:K], "
					"adaptive[:MIN-MAX] (K, MIN, MAX in "
					"%d..%d) or none\n", optarg,
					DPQ_FEC_MIN_GROUP,
					DPQ_FEC_GROUP_LIMIT);
				return 2;
			}
			break;
		case 'I': {
			double v;

			if (dpq_conf_parse_seconds(optarg, &v) != 0 ||
			    v < 0.001 || v > 3600) {
				fprintf(stderr, "dpquic-client: --idle-timeout "
					"wants seconds (0.001..3600), not "
					"'%s'\n", optarg);
				return 2;
			}
			idle_ms = (uint64_t)(v * 1000);
			break;
		}
		case 'G': {
			double v;

			if (dpq_conf_parse_seconds(optarg, &v) != 0 ||
			    v < 0.001 || v > 3600) {
				fprintf(stderr, "dpquic-client: --key-update-gap "
					"wants seconds (0.001..3600), not "
					"'%s'\n", optarg);
				return 2;
			}
			key_update_gap_us = (uint64_t)(v * 1e6);
			break;
		}
		case 'B':
			if (dpq_cc_fec_reaction_parse(optarg, &fec_cc) != 0 ||
			    fec_cc == DPQ_CC_FEC_IGNORE) {
				fprintf(stderr, "dpquic-client: --fec-cc '%s': "
					"expected guarded or loss\n", optarg);
				return 2;
			}
			break;
		case 'S':
			if (dpq_conn_spec_parse(optarg, &spec) != 0) {
				fprintf(stderr, "dpquic-client: --spec '%s': "
					"expected off, all, or a comma list "
					"of handshake, tail, repair\n",
					optarg);
				return 2;
			}
			break;
		case 'x':
			if (dpq_cc_find(optarg) == NULL) {
				char names[64];

				dpq_cc_names(names, sizeof(names), ", ");
				fprintf(stderr, "dpquic-client: --cc '%s': unknown "
					"congestion controller (known: %s)\n",
					optarg, names);
				return 2;
			}
			cc_name = optarg;
			break;
		case 'N': no_pacing = true; break;
		case 'M':
			errno = 0;
			migrate_after = strtoull(optarg, &end, 10);
			if (errno != 0 || *end != '\0' || optarg[0] == '-' ||
			    optarg[0] == '\0') {
				fprintf(stderr, "dpquic-client: --migrate-after "
					"wants a byte count, not '%s'\n",
					optarg);
				return 2;
			}
			migrate_pending = true;
			break;
		case 'A': {
			struct dpq_addr a;

			if (dpq_addr_parse(optarg, &a) != 0 || a.port != 0) {
				fprintf(stderr, "dpquic-client: --migrate-addr "
					"wants an IP address without a port, "
					"not '%s'\n", optarg);
				return 2;
			}
			migrate_addr = optarg;
			break;
		}
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (migrate_addr != NULL && !migrate_pending) {
		fprintf(stderr, "dpquic-client: --migrate-addr needs "
				"--migrate-after\n");
		return 2;
	}
	if (argc - optind < 2 || dpq_addr_parse(argv[optind], &server) != 0 ||
	    server.port == 0) {
		usage(stderr);
		return 2;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);

	tc.alpn[0] = alpn;
	tc.alpn_count = 1;
	if (suite) {
		tc.suites[0] = suite;
		tc.suite_count = 1;
	}
	tc.server_name = "dpquicd";
	if (dpq_tls_ctx_create(&tc, &tls) != 0) {
		fprintf(stderr, "dpquic-client: TLS setup failed\n");
		goto out;
	}

	if (dpdk_ip != NULL) {
		struct dpq_dpdk_conf dc = { 0 };

		if (dpq_addr_parse(dpdk_ip, &local) != 0 ||
		    !rte_eth_dev_is_valid_port(port_id)) {
			fprintf(stderr, "dpquic-client: --dpdk needs a local "
				"IP and a DPDK port from the EAL args\n");
			goto out;
		}
		if (local.port == 0)
			local.port = 40000 + (uint16_t)(rte_rdtsc() % 20000);
		dc.port_id = port_id;
		dc.nb_queues = 1;
		dc.socket_id = -1;
		dc.local = local;
		dc.prefix_len = prefix;
		dc.gateway = gateway;
		dc.promiscuous = true;
		drv = dpq_driver_dpdk_open(&dc);
	} else {
		struct dpq_udp_conf uc = { 0 };

		uc.local.family = server.family;
		uc.nb_queues = 1;
		uc.gso = !no_gso;
		uc.gro = true;
		uc.recv_err = true;	/* ICMP errors: see icmp_check() */
		uc.socket_id = -1;
		drv = dpq_driver_udp_open(&uc);
	}
	if (migrate_pending && dpdk_ip != NULL) {
		fprintf(stderr, "dpquic-client: --migrate-after works with "
				"kernel UDP only, not --dpdk\n");
		goto out;
	}
	if (drv == NULL || dpq_driver_start(drv) != 0) {
		fprintf(stderr, "dpquic-client: driver: %s\n", strerror(errno));
		goto out;
	}
	if (dpdk_ip != NULL) {
		/* Virtual links (memif) come up after start: wait (bounded)
		 * so the first ARP request is not sent into a dead link. */
		struct rte_eth_link link = { 0 };
		uint64_t until = rte_get_tsc_cycles() + 3 * rte_get_tsc_hz();

		while (rte_get_tsc_cycles() < until &&
		       (rte_eth_link_get_nowait(port_id, &link) != 0 ||
			link.link_status != RTE_ETH_LINK_UP))
			rte_delay_ms(10);
	}

	fetch.paths = &argv[optind + 1];
	fetch.n = (unsigned int)(argc - optind - 1);
	fetch.files = calloc(fetch.n, sizeof(*fetch.files));
	fetch.got = calloc(fetch.n, sizeof(*fetch.got));
	hq.paths = (const char *const *)fetch.paths;
	hq.npaths = fetch.n;
	hq.on_body = on_body;
	hq.clock = clock_us;
	hq.arg = &fetch;
	if (fetch.files == NULL || fetch.got == NULL ||
	    dpq_hq_client_create(&hq, &hc) != 0) {
		fprintf(stderr, "dpquic-client: bad request list\n");
		goto out;
	}
	sc.drv = drv;
	sc.nb_shards = 1;
	sc.conn.role = DPQ_ROLE_CLIENT;
	sc.conn.max_data = 16 << 20;
	sc.conn.max_stream_data = 8 << 20;
	sc.conn.key_update_pkts = key_update;
	sc.conn.key_update_gap_us = key_update_gap_us;
	sc.conn.idle_timeout_ms = idle_ms;
	sc.conn.fec_max_group = fec_max_group;
	sc.conn.fec = fec;
	sc.conn.spec_retx = spec;
	sc.conn.fec_cc = fec_cc;
	sc.conn.cc_name = cc_name;
	sc.conn.no_pacing = no_pacing;
	sc.hs.ops = &dpq_hs_direct_ops;
	sc.hs.hs = tls;
	sc.hs.attach = hs_attach;
	sc.hs.arg = &resume;
	resume.tls = tls;
	if (cache_path != NULL) {
		char key[DPQ_CACHE_SERVER_MAX];

		dpq_addr_format(&server, key, sizeof(key));
		resume_start(&resume, cache_path, key, alpn, no_early, &copts);
	}
	client_ops = dpq_hq_client_ops;
	client_ops.on_closed = on_closed;
	sc.app.ops = &client_ops;
	sc.app.conn_ctx = client_ctx;
	sc.app.arg = hc;
	sc.socket_id = SOCKET_ID_ANY;
	sc.max_conns = 4;
	if (dpq_shard_create(&sc, &shard) != 0 ||
	    dpq_shard_connect_opts(shard, &server, &copts, &conn) != 0) {
		fprintf(stderr, "dpquic-client: cannot start the connection\n");
		goto out;
	}
	handle = dpq_shard_conn_handle(shard, conn);
	t0 = dpq_shard_now_us();
	icmp_at = t0;
	deadline = t0 + (uint64_t)(timeout * 1e6);
	while (!stop && !dpq_hq_client_done(hc) &&
	       dpq_shard_conn_count(shard) > 0) {
		uint64_t now = dpq_shard_now_us();

		if (now >= deadline) {
			timeout_say(shard, handle, &server, timeout);
			break;
		}
		dpq_shard_poll(shard, now);
		conn = dpq_shard_conn_by_handle(shard, handle);
		if (conn != NULL) {
			dpq_hq_client_poll(hc, conn);
			dpq_conn_get_stats(conn, &cstats);
			if (migrate_pending &&
			    cstats.stream_bytes_recv >= migrate_after) {
				n = migrate(drv, conn, migrate_addr, now);
				if (n != -EAGAIN)
					migrate_pending = false;
				if (n != 0 && n != -EAGAIN)
					fprintf(stderr, "dpquic-client: cannot "
						"migrate: %s\n", strerror(-n));
			}
		}
		if (dpdk_ip == NULL && now - icmp_at > 10000) {
			icmp_at = now;
			if (icmp_check(drv, &icmp_seen, cstats.pkts_recv))
				break;
		}
	}
	conn = dpq_shard_conn_by_handle(shard, handle);
	/* The ticket comes after the handshake: with --cache, give it a few
	 * round trips if the answers were faster. */
	if (resume.cache != NULL && !resume.new_ticket && conn != NULL &&
	    !closed) {
		uint64_t until = dpq_shard_now_us() + 3 * (cstats.srtt_us ?
			cstats.srtt_us : 100000);

		while (!stop && !resume.new_ticket &&
		       dpq_shard_now_us() < until &&
		       dpq_shard_conn_by_handle(shard, handle) != NULL)
			dpq_shard_poll(shard, dpq_shard_now_us());
		conn = dpq_shard_conn_by_handle(shard, handle);
		if (conn != NULL)
			dpq_conn_get_stats(conn, &cstats);
	}
	resume_finish(&resume, cache_path, conn);
	/* Any close seen here was not ours: we close only below. */
	if (closed)
		report_close(&close_info, alpn);
	else if (conn == NULL && !dpq_hq_client_done(hc))
		fprintf(stderr, "dpquic-client: the connection closed early\n");
	rc = report(hc, &fetch, &cstats, t0, dpq_shard_now_us()) ? 0 : 1;
	/* Close politely: CONNECTION_CLOSE (no error), sent at once. */
	if (conn != NULL && dpq_conn_state(conn) < DPQ_CONN_CLOSING) {
		uint64_t until = dpq_shard_now_us() + 20000;

		dpq_conn_close(conn, true, 0, "");
		while (dpq_shard_now_us() < until)
			dpq_shard_poll(shard, dpq_shard_now_us());
	}
out:
	dpq_shard_destroy(shard);
	dpq_hq_client_destroy(hc);
	free(fetch.files);
	free(fetch.got);
	if (drv != NULL)
		dpq_driver_close(drv);
	dpq_tls_ctx_destroy(tls);
	dpq_cache_free(resume.cache);
	if (resume.ent != NULL) {
		explicit_bzero(resume.ent, sizeof(*resume.ent));
		free(resume.ent);
	}
	rte_eal_cleanup();
	return rc;
}
