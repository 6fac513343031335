/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The handshake service in the connection's thread (see hs_direct.h).
 */
#include <errno.h>

#include "control/tls/hs_direct.h"
#include "dataplane/engine/tparams.h"

static int
on_secret(void *arg, enum dpq_tls_level level, bool write, uint16_t suite,
		const uint8_t *secret, size_t len)
{
	return dpq_conn_hs_secret(arg, (enum dpq_epoch)level, write, suite,
			secret, len);
}

static int
on_send(void *arg, enum dpq_tls_level level, const uint8_t *data, size_t len)
{
	return dpq_conn_hs_send(arg, (enum dpq_epoch)level, data, len);
}

static uint64_t
on_peer_tparams(void *arg, const uint8_t *data, size_t len)
{
	return dpq_conn_hs_peer_tparams(arg, data, len);
}

static const struct dpq_tls_callbacks direct_cb = {
	.on_secret = on_secret,
	.on_send = on_send,
	.on_peer_tparams = on_peer_tparams,
};

static int
direct_recv(void *hs, struct dpq_conn *c, enum dpq_epoch epoch,
		const uint8_t *data, size_t len)
{
	struct dpq_tls *tls = dpq_conn_hs_ctx(c);
	bool was_complete;

	(void)hs;
	if (tls == NULL)
		return -EINVAL;
	was_complete = dpq_tls_handshake_complete(tls);
	if (dpq_tls_recv(tls, (enum dpq_tls_level)epoch, data, len) != 0) {
		dpq_conn_hs_failed(c, dpq_tls_error_code(tls));
		return 0;
	}
	if (!was_complete && dpq_tls_handshake_complete(tls))
		dpq_conn_hs_complete(c, dpq_tls_alpn(tls));
	return 0;
}

static void
direct_release(void *hs, struct dpq_conn *c)
{
	(void)hs;
	dpq_tls_free(dpq_conn_hs_ctx(c));
	dpq_conn_set_hs_ctx(c, NULL);
}

const struct dpq_hs_ops dpq_hs_direct_ops = {
	.recv = direct_recv,
	.release = direct_release,
};

int
dpq_hs_direct_attach(struct dpq_tls_ctx *ctx, struct dpq_conn *c)
{
	uint8_t tp[DPQ_TPARAMS_MAX_LEN];
	struct dpq_tls *tls = NULL;
	ssize_t n;
	int rc;

	n = dpq_conn_local_tparams(c, tp, sizeof(tp));
	if (n < 0)
		return (int)n;
	rc = dpq_tls_new(ctx, &direct_cb, c, tp, (size_t)n, &tls);
	if (rc != 0)
		return rc;
	dpq_conn_set_hs_ctx(c, tls);
	return 0;
}
