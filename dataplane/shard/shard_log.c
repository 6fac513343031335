/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The shard's log lines: see shard_log.h.
 */
#include <inttypes.h>
#include <stdio.h>

#include <rte_log.h>

#include "dataplane/engine/errors.h"
#include "dataplane/shard/shard_log.h"

RTE_LOG_REGISTER(dpq_logtype_shard, dpquic.shard, NOTICE);
RTE_LOG_REGISTER(dpq_logtype_conn, dpquic.conn, NOTICE);
RTE_LOG_REGISTER(dpq_logtype_peer, dpquic.peer, WARNING);

/* "PROTOCOL_VIOLATION (0xa)", "CRYPTO_ERROR 0x128", "application 0x5" */
static void
code_str(const struct dpq_conn_close_info *ci, char *buf, size_t n)
{
	if (ci->app)
		snprintf(buf, n, "application error 0x%" PRIx64, ci->error_code);
	else if (ci->error_code >= 0x100 && ci->error_code <= 0x1ff)
		snprintf(buf, n, "CRYPTO_ERROR (TLS alert %" PRIu64 ")",
			ci->error_code - 0x100);
	else
		snprintf(buf, n, "%s (0x%" PRIx64 ")",
			dpq_transport_error_str(ci->error_code), ci->error_code);
}

static const char *
close_why(const struct dpq_conn_close_info *ci, char *buf, size_t n)
{
	char code[64];

	if (ci->idle)
		return "idle timeout";
	if (ci->handshake_timeout)
		return "handshake timeout";
	code_str(ci, code, sizeof(code));
	snprintf(buf, n, "%s %s%s%s%s", ci->remote ? "by the peer:" :
		"by us:", code, ci->reason[0] ? " \"" : "", ci->reason,
		ci->reason[0] ? "\"" : "");
	return buf;
}

void
dpq_shard_log_conn(unsigned int shard, uint64_t handle, const char *peer,
		const struct dpq_conn *c, enum dpq_shard_conn_event ev)
{
	struct dpq_conn_stats st;
	char why[256];

	if (!rte_log_can_log(dpq_logtype_conn, RTE_LOG_DEBUG))
		return;
	switch (ev) {
	case DPQ_SHARD_EV_OPEN:
		rte_log(RTE_LOG_DEBUG, dpq_logtype_conn, "conn %" PRIx64
			" shard %u: new from %s\n", handle, shard, peer);
		break;
	case DPQ_SHARD_EV_HANDSHAKE:
		dpq_conn_get_stats(c, &st);
		rte_log(RTE_LOG_DEBUG, dpq_logtype_conn, "conn %" PRIx64
			" %s: handshake done in %.1f ms, ALPN %s, cipher "
			"0x%04x\n", handle, peer, (double)st.handshake_us / 1e3,
			dpq_conn_alpn(c) ? dpq_conn_alpn(c) : "-",
			st.cipher_suite);
		break;
	case DPQ_SHARD_EV_CLOSE:
		dpq_conn_get_stats(c, &st);
		/* What arrived and what of it was used: a connection whose
		 * peer's packets reach it but are dropped or held reads
		 * differently from one whose peer's packets never come. */
		rte_log(RTE_LOG_DEBUG, dpq_logtype_conn, "conn %" PRIx64
			" %s: closed %s; %" PRIu64 " bytes sent, %" PRIu64
			" received, %" PRIu64 " packets lost; packets received"
			" %" PRIu64 ", dropped %" PRIu64 ", failed to open %"
			PRIu64 "\n", handle, peer,
			close_why(dpq_conn_close_info(c), why, sizeof(why)),
			st.bytes_sent, st.bytes_recv, st.pkts_lost,
			st.pkts_recv, st.pkts_dropped, st.auth_failures);
		break;
	}
}

/* Rate limit: true when a line may be printed now; more gets the
 * " (N more like it not shown)" suffix. */
static bool
warn_pass(struct dpq_shard_warn *w, uint64_t now_us, char *more, size_t n)
{
	more[0] = '\0';
	if (now_us - w->window_us >= 1000000) {
		w->window_us = now_us;
		w->in_window = 0;
	}
	if (w->in_window >= DPQ_SHARD_WARN_PER_S) {
		w->suppressed++;
		return false;
	}
	w->in_window++;
	if (w->suppressed != 0)
		snprintf(more, n, " (%" PRIu64 " more like it not shown)",
			w->suppressed);
	w->suppressed = 0;
	return true;
}

bool
dpq_shard_log_drop(struct dpq_shard_warn *w, unsigned int shard,
		const char *peer, const char *why, size_t len,
		uint64_t now_us)
{
	char more[64];

	if (!rte_log_can_log(dpq_logtype_peer, RTE_LOG_DEBUG) ||
	    !warn_pass(w, now_us, more, sizeof(more)))
		return false;
	rte_log(RTE_LOG_DEBUG, dpq_logtype_peer, "peer %s (shard %u): "
		"datagram of %zu bytes dropped: %s%s\n", peer, shard, len,
		why, more);
	return true;
}

bool
dpq_shard_log_peer_error(struct dpq_shard_warn *w, unsigned int shard,
		const char *peer, const struct dpq_conn_close_info *ci,
		uint64_t now_us)
{
	char code[64], more[64];

	if (!rte_log_can_log(dpq_logtype_peer, RTE_LOG_WARNING) ||
	    !warn_pass(w, now_us, more, sizeof(more)))
		return false;
	code_str(ci, code, sizeof(code));
	rte_log(RTE_LOG_WARNING, dpq_logtype_peer, "peer %s (shard %u): %s%s"
		"%s%s: its connection is closed%s\n", peer, shard, code,
		ci->reason[0] ? " \"" : "", ci->reason,
		ci->reason[0] ? "\"" : "", more);
	return true;
}

bool
dpq_shard_log_peer_warn(struct dpq_shard_warn *w, unsigned int shard,
		const char *peer, const char *what, uint64_t now_us)
{
	char more[64];

	if (!rte_log_can_log(dpq_logtype_peer, RTE_LOG_WARNING) ||
	    !warn_pass(w, now_us, more, sizeof(more)))
		return false;
	rte_log(RTE_LOG_WARNING, dpq_logtype_peer, "peer %s (shard %u): %s%s\n",
		peer, shard, what, more);
	return true;
}

bool
dpq_shard_log_flood(struct dpq_shard_flood_log *fl, unsigned int shard,
		const struct dpq_shard_flood *c, uint32_t halfopen,
		uint64_t now_us)
{
	const struct dpq_shard_flood *o = &fl->at_last;
	char since[48];

	if (fl->printed && now_us - fl->last_us < DPQ_SHARD_FLOOD_EVERY_US)
		return false;
	if (c->retry_halfopen == o->retry_halfopen &&
	    c->reply_rate_drops == o->reply_rate_drops &&
	    c->evicted == o->evicted && c->refused == o->refused)
		return false;
	if (!rte_log_can_log(dpq_logtype_peer, RTE_LOG_WARNING))
		return false;
	if (fl->printed)
		snprintf(since, sizeof(since), "in the last %.0f s",
			(double)(now_us - fl->last_us) / 1e6);
	else
		snprintf(since, sizeof(since), "so far");
	rte_log(RTE_LOG_WARNING, dpq_logtype_peer, "shard %u: a flood of new "
		"connections (%u handshakes half-open): %s %" PRIu64
		" Initials answered with a Retry, %" PRIu64 " replies over "
		"their rate dropped, %" PRIu64 " half-open connections "
		"evicted, %" PRIu64 " new connections refused (dpquic-ctl "
		"stats: listener, halfopen)\n", shard, halfopen, since,
		c->retry_halfopen - o->retry_halfopen,
		c->reply_rate_drops - o->reply_rate_drops,
		c->evicted - o->evicted, c->refused - o->refused);
	fl->at_last = *c;
	fl->last_us = now_us;
	fl->printed = true;
	return true;
}
