/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The handshake service in the connection's thread (see hs_direct.h). A
 * connection's hs_ctx is its struct direct: the TLS handshake and the
 * owner's ticket callback.
 */
#include <errno.h>
#include <stdlib.h>

#include "control/tls/hs_direct.h"
#include "dataplane/engine/tparams.h"

struct direct {
	struct dpq_conn *c;
	struct dpq_tls *tls;	/* NULL while dpq_tls_new runs */
	void (*on_ticket)(void *arg, struct dpq_conn *c, const uint8_t *data,
			size_t len, bool early_data);
	void *arg;
};

static int
on_secret(void *arg, enum dpq_tls_level level, bool write, uint16_t suite,
		const uint8_t *secret, size_t len)
{
	struct direct *d = arg;
	int rc;

	rc = dpq_conn_hs_secret(d->c, (enum dpq_epoch)level, write, suite,
			secret, len);
	/* Server: the 0-RTT read key means TLS accepted 0-RTT, and the
	 * ClientHello named the application (RFC 9001 §4.6.1). */
	if (rc == 0 && level == DPQ_TLS_LEVEL_EARLY && !write &&
	    d->tls != NULL && dpq_conn_is_server(d->c))
		dpq_conn_hs_early(d->c, dpq_tls_alpn_now(d->tls));
	return rc;
}

static int
on_send(void *arg, enum dpq_tls_level level, const uint8_t *data, size_t len)
{
	struct direct *d = arg;

	return dpq_conn_hs_send(d->c, (enum dpq_epoch)level, data, len);
}

static uint64_t
on_peer_tparams(void *arg, const uint8_t *data, size_t len)
{
	struct direct *d = arg;

	return dpq_conn_hs_peer_tparams(d->c, data, len);
}

static void
on_ticket(void *arg, const uint8_t *data, size_t len, bool early)
{
	struct direct *d = arg;

	if (d->on_ticket != NULL)
		d->on_ticket(d->arg, d->c, data, len, early);
}

static const struct dpq_tls_callbacks direct_cb = {
	.on_secret = on_secret,
	.on_send = on_send,
	.on_peer_tparams = on_peer_tparams,
	.on_ticket = on_ticket,
};

static int
direct_recv(void *hs, struct dpq_conn *c, enum dpq_epoch epoch,
		const uint8_t *data, size_t len)
{
	struct direct *d = dpq_conn_hs_ctx(c);
	bool was_complete;

	(void)hs;
	if (d == NULL || d->tls == NULL)
		return -EINVAL;
	was_complete = dpq_tls_handshake_complete(d->tls);
	if (dpq_tls_recv(d->tls, (enum dpq_tls_level)epoch, data, len) != 0) {
		dpq_conn_hs_failed(c, dpq_tls_error_code(d->tls));
		return 0;
	}
	if (!was_complete && dpq_tls_handshake_complete(d->tls)) {
		dpq_conn_hs_resumption(c, dpq_tls_resumed(d->tls),
				dpq_tls_early_data_accepted(d->tls));
		dpq_conn_hs_complete(c, dpq_tls_alpn(d->tls));
	}
	return 0;
}

static void
direct_release(void *hs, struct dpq_conn *c)
{
	struct direct *d = dpq_conn_hs_ctx(c);

	(void)hs;
	if (d == NULL)
		return;
	dpq_tls_free(d->tls);
	free(d);
	dpq_conn_set_hs_ctx(c, NULL);
}

const struct dpq_hs_ops dpq_hs_direct_ops = {
	.recv = direct_recv,
	.release = direct_release,
};

int
dpq_hs_direct_attach_opts(struct dpq_tls_ctx *ctx, struct dpq_conn *c,
		const struct dpq_hs_direct_opts *o)
{
	uint8_t tp[DPQ_TPARAMS_MAX_LEN];
	struct dpq_tls *tls = NULL;
	struct direct *d;
	ssize_t n;
	int rc;

	n = dpq_conn_local_tparams(c, tp, sizeof(tp));
	if (n < 0)
		return (int)n;
	d = calloc(1, sizeof(*d));
	if (d == NULL)
		return -ENOMEM;
	d->c = c;
	if (o != NULL) {
		d->on_ticket = o->on_ticket;
		d->arg = o->arg;
	}
	/* Set first: a client's 0-RTT keys arrive inside dpq_tls_new. */
	dpq_conn_set_hs_ctx(c, d);
	rc = dpq_tls_new_opts(ctx, &direct_cb, d, tp, (size_t)n,
			o != NULL ? o->session : NULL, &tls);
	if (rc != 0) {
		dpq_conn_set_hs_ctx(c, NULL);
		free(d);
		return rc;
	}
	d->tls = tls;
	return 0;
}

int
dpq_hs_direct_attach(struct dpq_tls_ctx *ctx, struct dpq_conn *c)
{
	return dpq_hs_direct_attach_opts(ctx, c, NULL);
}

struct dpq_tls *
dpq_hs_direct_tls(const struct dpq_conn *c)
{
	struct direct *d = dpq_conn_hs_ctx(c);

	return d != NULL ? d->tls : NULL;
}
