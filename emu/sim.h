/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpq_sim: a dpquic client and server connection (dataplane/quic) joined
 * by an emulated link (emu/linkem.h, one model per direction), in virtual
 * time. The handshake runs through control/tls/hs_direct in the same
 * thread. Nothing waits: the loop jumps from one event (a datagram
 * arriving, a connection timer) to the next, so a 60-second transfer
 * costs only the CPU of its packets. Deterministic: the same conf and
 * seed give the same run, packet for packet.
 *
 * Two levels:
 *   - dpq_sim_create/run/destroy with the caller's application callbacks
 *     (struct dpq_app_ops) on either side, for protocol tests;
 *   - dpq_sim_transfer(): a bulk transfer of N bytes on each of K streams
 *     in one direction, verified byte for byte, with per-stream
 *     completion times: what the impairment suite and the benchmarks
 *     run, many seeds in a loop.
 *
 * Clocks: the link models run on time since the start of the simulation
 * in ns (so a blackout "2s+2s" starts 2 s in); the connections get
 * DPQ_SIM_T0_US plus that, in us.
 */
#ifndef DPQ_EMU_SIM_H
#define DPQ_EMU_SIM_H

#include <stdbool.h>
#include <stdint.h>

#include "dataplane/quic/conn.h"
#include "dataplane/quic/trace.h"
#include "emu/linkem.h"

/* Connection time at the start of every simulation (us). */
#define DPQ_SIM_T0_US		UINT64_C(1000000)
/* Datagrams one direction may hold in flight (beyond: counted, dropped). */
#define DPQ_SIM_LINK_MAX	(1u << 17)

struct dpq_sim;

struct dpq_sim_conf {
	struct dpq_linkem_conf c2s;	/* client to server */
	struct dpq_linkem_conf s2c;	/* server to client */
	/* Connection settings (role is set by the sim; cc_name etc.). */
	struct dpq_conn_conf client;
	struct dpq_conn_conf server;
	uint16_t suite;			/* DPQ_TLS_* cipher suite; 0: any */
	const char *alpn;		/* both sides; NULL: "hq-interop" */
	const struct dpq_app_ops *capp, *sapp;
	void *capp_ctx, *sapp_ctx;
	/* Seeds connection IDs and tokens (the links have their own). */
	uint64_t seed;
	/* Trace hooks (dataplane/quic/trace.h), NULL: off. */
	dpq_trace_fn *ctrace, *strace;
	void *ctrace_ctx, *strace_ctx;
};

/* Set up TLS contexts, links and the client connection. Returns 0 or a
 * negative errno (-EINVAL for a bad link configuration). */
int dpq_sim_create(const struct dpq_sim_conf *conf, struct dpq_sim **out);
void dpq_sim_destroy(struct dpq_sim *s);

struct dpq_conn *dpq_sim_client(const struct dpq_sim *s);
/* NULL until the client's first Initial reached the server. */
struct dpq_conn *dpq_sim_server(const struct dpq_sim *s);
/* Virtual time since the start, ns; and as the connections see it, us. */
uint64_t dpq_sim_elapsed_ns(const struct dpq_sim *s);
uint64_t dpq_sim_now_us(const struct dpq_sim *s);
/* The link models (to read stats or change conf between runs). */
struct dpq_linkem *dpq_sim_link(struct dpq_sim *s, bool c2s);
/* Datagrams dropped because DPQ_SIM_LINK_MAX were in flight. */
uint64_t dpq_sim_overflow(const struct dpq_sim *s);

/* Have dpq_sim_run() stop at ns (time since the start) even if nothing
 * happens then, so that done() can act (e.g. an application starting a
 * stream on a schedule). One such time; a later call replaces it. */
void dpq_sim_wake_at(struct dpq_sim *s, uint64_t ns);

/* Run until done(s, arg) returns true (checked after every step) or
 * max_ns of virtual time passed. done NULL: until neither connection has
 * a timer or a datagram in flight. Returns true if done() became true
 * (done NULL: true if the run went idle before max_ns). */
bool dpq_sim_run(struct dpq_sim *s, bool (*done)(struct dpq_sim *s,
		void *arg), void *arg, uint64_t max_ns);

/* ---- bulk transfer ------------------------------------------------------ */

#define DPQ_SIM_XFER_STREAMS	64

struct dpq_sim_xfer {
	uint64_t bytes;		/* per stream */
	unsigned int streams;	/* 1..DPQ_SIM_XFER_STREAMS */
	bool upload;		/* client sends; false: server sends */
	uint64_t max_ns;	/* give up after this much virtual time */
	/* Record when stream 0's received bytes reach each k/marks of its
	 * size (k = 1..marks; at most DPQ_SIM_XFER_MARKS; 0: none). */
	unsigned int marks;
	/* Stream i starts stagger_ns * i after the handshake (0: all at
	 * once). With streams == 1 and objects > 1 (upload only): the
	 * client writes stream 0 as objects equal parts, part i from
	 * stagger_ns * i on (messages on one stream; marks = objects
	 * gives their delivery times). */
	uint64_t stagger_ns;
	unsigned int objects;
};

#define DPQ_SIM_XFER_MARKS	64

struct dpq_sim_xfer_result {
	bool ok;		/* every byte arrived, in order, exact, + FIN */
	bool corrupt;		/* a byte differed from what was sent */
	uint64_t handshake_ns;	/* start -> client handshake complete */
	uint64_t done_ns;	/* start -> last stream complete */
	/* start of the transfer (handshake complete) -> stream i complete
	 * (UINT64_MAX: never). */
	uint64_t stream_ns[DPQ_SIM_XFER_STREAMS];
	/* start -> stream 0 delivered k/marks of its bytes, in order */
	uint64_t mark_ns[DPQ_SIM_XFER_MARKS];
	uint64_t bytes;		/* stream bytes received in total */
	double goodput_bps;	/* bytes * 8 / (done - handshake) */
	struct dpq_conn_stats client, server;
	struct dpq_linkem_stats c2s, s2c;
	uint64_t overflow;
	/* The sender's first slow start (upload: the client's): the ns
	 * from the start when its first congestion event set ssthresh
	 * (UINT64_MAX: never), the largest window it reached before, and
	 * the sending direction's queue drops and datagrams offered up to
	 * one smoothed RTT after the event (so that what was already in
	 * flight has met the queue). The rest of the drops came later. */
	uint64_t ss_exit_ns;
	uint64_t ss_peak_cwnd;
	uint64_t ss_dropped, ss_offered;
	double cpu_s;		/* CPU time of the run (process clock) */
	/* A connection that closed before the end: who, error, reason
	 * ("" when none did). */
	char closed[192];
};

/* Run one transfer from scratch with conf (its app fields are replaced by
 * the transfer's own). Returns 0 when it finished byte-exact, -ETIMEDOUT
 * when max_ns passed first, -EPROTO on corruption or a connection closed
 * early, another negative errno on setup failure; *res is filled in all
 * cases but setup failure. */
int dpq_sim_transfer(const struct dpq_sim_conf *conf,
		const struct dpq_sim_xfer *x, struct dpq_sim_xfer_result *res);

#endif /* DPQ_EMU_SIM_H */
