/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpq_hs_direct: the handshake service run in the connection's own
 * thread. It implements struct dpq_hs_ops by calling dpq_tls directly and
 * turns TLS callbacks into dpq_conn_hs_*() calls at once. Used where no
 * management thread exists: unit tests that run two connections in
 * memory, and the kernel-UDP client. The daemon's shards use the rings of
 * control/mgmt instead, so public-key work stays off the dataplane cores.
 */
#ifndef DPQ_CONTROL_HS_DIRECT_H
#define DPQ_CONTROL_HS_DIRECT_H

#include "control/tls/tls.h"
#include "dataplane/quic/conn.h"

/* The struct dpq_hs_ops to put in struct dpq_conn_init, with the
 * dpq_tls_ctx as its hs argument. */
extern const struct dpq_hs_ops dpq_hs_direct_ops;

/* Resumption and 0-RTT of one connection's handshake. */
struct dpq_hs_direct_opts {
	/* Tickets, 0-RTT (tls.h); NULL: none. Used during attach only. */
	const struct dpq_tls_session_opts *session;
	/* Client: a NewSessionTicket arrived (see dpq_tls_callbacks). */
	void (*on_ticket)(void *arg, struct dpq_conn *c, const uint8_t *data,
			size_t len, bool early_data);
	void *arg;
};

/* Start the handshake of c (after dpq_conn_create with hs_ops =
 * &dpq_hs_direct_ops and hs = ctx). A client's ClientHello is queued on c.
 * Returns 0 or a negative errno. */
int dpq_hs_direct_attach(struct dpq_tls_ctx *ctx, struct dpq_conn *c);
/* The same with resumption and 0-RTT options (NULL: none). */
int dpq_hs_direct_attach_opts(struct dpq_tls_ctx *ctx, struct dpq_conn *c,
		const struct dpq_hs_direct_opts *opts);

/* c's TLS handshake (resumed? 0-RTT accepted?), NULL once released. */
struct dpq_tls *dpq_hs_direct_tls(const struct dpq_conn *c);

#endif /* DPQ_CONTROL_HS_DIRECT_H */
