/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpq_hs_null (hs_null.h). Messages on a CRYPTO stream: one type byte, a
 * two-byte length, the body; they may arrive split across frames, so each
 * epoch's bytes are collected until a message is whole.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dataplane/crypto/suites.h"
#include "dataplane/engine/errors.h"
#include "tests/lib/hs_null.h"

enum { MSG_CH = 1, MSG_SH, MSG_EE, MSG_FIN };

#define MSG_MAX	600

struct hs_null {
	uint8_t buf[DPQ_EPOCH_COUNT][MSG_MAX];
	uint16_t len[DPQ_EPOCH_COUNT];
	bool done;
};

/* The state of a connection whose handshake completed: the buffers are
 * freed then (a real service drops its TLS session too), and late
 * retransmitted handshake bytes are ignored. */
static struct hs_null finished;

unsigned long dpq_hs_null_completed, dpq_hs_null_failed;

/* Fixed secrets: [client, server] x [handshake, 1-RTT]. */
static const uint8_t secret[2][2][32] = {
	{ { 0xc1, 0x01 }, { 0xc1, 0x03 } },
	{ { 0x5e, 0x02 }, { 0x5e, 0x04 } },
};

static int
install(struct dpq_conn *c, enum dpq_epoch e, bool write)
{
	bool server = dpq_conn_is_server(c);
	/* What we write is our own secret; what we read, the peer's. */
	int who = write ? server : !server;

	return dpq_conn_hs_secret(c, e, write, DPQ_TLS_AES_128_GCM_SHA256,
			secret[who][e == DPQ_EPOCH_1RTT], 32);
}

static int
send_msg(struct dpq_conn *c, enum dpq_epoch e, uint8_t type, bool tparams)
{
	uint8_t m[MSG_MAX];
	ssize_t n = 0;

	if (tparams) {
		n = dpq_conn_local_tparams(c, m + 3, sizeof(m) - 3);
		if (n < 0)
			return (int)n;
	}
	m[0] = type;
	m[1] = (uint8_t)(n >> 8);
	m[2] = (uint8_t)n;
	return dpq_conn_hs_send(c, e, m, (size_t)n + 3);
}

static void
fail(struct dpq_conn *c, uint64_t code)
{
	dpq_hs_null_failed++;
	dpq_conn_hs_failed(c, code);
}

static void
complete(struct dpq_conn *c)
{
	struct hs_null *h = dpq_conn_hs_ctx(c);

	dpq_hs_null_completed++;
	h->done = true;
	dpq_conn_hs_complete(c, DPQ_HS_NULL_ALPN);
}

/* One whole message at epoch e. */
static void
on_msg(struct dpq_conn *c, enum dpq_epoch e, uint8_t type,
		const uint8_t *body, size_t len)
{
	bool server = dpq_conn_is_server(c);
	uint64_t te;

	if (server && e == DPQ_EPOCH_INITIAL && type == MSG_CH) {
		te = dpq_conn_hs_peer_tparams(c, body, len);
		if (te != 0) {
			fail(c, te);
			return;
		}
		if (install(c, DPQ_EPOCH_HANDSHAKE, false) != 0 ||
		    install(c, DPQ_EPOCH_HANDSHAKE, true) != 0 ||
		    send_msg(c, DPQ_EPOCH_INITIAL, MSG_SH, false) != 0 ||
		    send_msg(c, DPQ_EPOCH_HANDSHAKE, MSG_EE, true) != 0 ||
		    install(c, DPQ_EPOCH_1RTT, true) != 0)
			fail(c, DPQ_TE_INTERNAL_ERROR);
	} else if (!server && e == DPQ_EPOCH_INITIAL && type == MSG_SH) {
		if (install(c, DPQ_EPOCH_HANDSHAKE, false) != 0 ||
		    install(c, DPQ_EPOCH_HANDSHAKE, true) != 0)
			fail(c, DPQ_TE_INTERNAL_ERROR);
	} else if (!server && e == DPQ_EPOCH_HANDSHAKE && type == MSG_EE) {
		te = dpq_conn_hs_peer_tparams(c, body, len);
		if (te != 0) {
			fail(c, te);
			return;
		}
		if (install(c, DPQ_EPOCH_1RTT, false) != 0 ||
		    install(c, DPQ_EPOCH_1RTT, true) != 0 ||
		    send_msg(c, DPQ_EPOCH_HANDSHAKE, MSG_FIN, false) != 0) {
			fail(c, DPQ_TE_INTERNAL_ERROR);
			return;
		}
		complete(c);
	} else if (server && e == DPQ_EPOCH_HANDSHAKE && type == MSG_FIN) {
		if (install(c, DPQ_EPOCH_1RTT, false) != 0) {
			fail(c, DPQ_TE_INTERNAL_ERROR);
			return;
		}
		complete(c);
	} else {
		/* TLS alert unexpected_message (RFC 9001 §4.8). */
		fail(c, DPQ_TE_CRYPTO(10));
	}
}

static int
hs_recv(void *hs, struct dpq_conn *c, enum dpq_epoch e, const uint8_t *data,
		size_t len)
{
	struct hs_null *h = dpq_conn_hs_ctx(c);

	(void)hs;
	if (h == &finished)
		return 0;
	if (h == NULL || (unsigned int)e >= DPQ_EPOCH_COUNT)
		return -EINVAL;
	while (len > 0) {
		size_t take = MSG_MAX - h->len[e], need;

		if (take == 0) {
			fail(c, DPQ_TE_CRYPTO(10));
			return 0;
		}
		if (take > len)
			take = len;
		memcpy(h->buf[e] + h->len[e], data, take);
		h->len[e] = (uint16_t)(h->len[e] + take);
		data += take;
		len -= take;
		while (h->len[e] >= 3) {
			need = 3 + ((size_t)h->buf[e][1] << 8 | h->buf[e][2]);
			if (need > MSG_MAX) {
				fail(c, DPQ_TE_CRYPTO(50));	/* decode_error */
				return 0;
			}
			if (h->len[e] < need)
				break;
			on_msg(c, e, h->buf[e][0], h->buf[e] + 3, need - 3);
			if (h->done) {
				free(h);
				dpq_conn_set_hs_ctx(c, &finished);
				return 0;
			}
			memmove(h->buf[e], h->buf[e] + need, h->len[e] - need);
			h->len[e] = (uint16_t)(h->len[e] - need);
		}
	}
	return 0;
}

static void
hs_release(void *hs, struct dpq_conn *c)
{
	struct hs_null *h = dpq_conn_hs_ctx(c);

	(void)hs;
	if (h != &finished)
		free(h);
	dpq_conn_set_hs_ctx(c, NULL);
}

const struct dpq_hs_ops dpq_hs_null_ops = {
	.recv = hs_recv,
	.release = hs_release,
};

int
dpq_hs_null_attach(struct dpq_conn *c)
{
	struct hs_null *h = calloc(1, sizeof(*h));

	if (h == NULL)
		return -ENOMEM;
	dpq_conn_set_hs_ctx(c, h);
	if (!dpq_conn_is_server(c))
		return send_msg(c, DPQ_EPOCH_INITIAL, MSG_CH, true);
	return 0;
}
