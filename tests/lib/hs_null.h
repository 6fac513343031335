/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpq_hs_null: a handshake service without TLS, for tests and benches of
 * the dataplane (the shard loop, memory per connection, idle connections
 * by the hundred thousand) where public-key work would only take time.
 *
 * It runs the flights of a TLS 1.3 handshake with fixed AES-128-GCM
 * secrets, so every packet number space, key installation, address
 * validation, confirmation (HANDSHAKE_DONE) and key discard of the
 * connection engine runs as with GnuTLS:
 *   client Initial    CH  + client transport parameters
 *   server Initial    SH;  Handshake: EE + server transport parameters
 *   client Handshake  FIN (client complete)  -> server complete
 * Anyone can decrypt such traffic: never in a program that serves.
 */
#ifndef DPQ_TESTS_HS_NULL_H
#define DPQ_TESTS_HS_NULL_H

#include "dataplane/quic/conn.h"

/* The ALPN both sides report. */
#define DPQ_HS_NULL_ALPN	"dpq-null"

/* For struct dpq_conn_init.hs_ops (the hs argument is unused). */
extern const struct dpq_hs_ops dpq_hs_null_ops;

/* Start the handshake of c (a client queues its first flight). Returns 0
 * or -ENOMEM. */
int dpq_hs_null_attach(struct dpq_conn *c);

/* Handshakes completed and failed so far (this process). */
extern unsigned long dpq_hs_null_completed, dpq_hs_null_failed;

#endif
