/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * TLS handshake input through GnuTLS (control/tls/tls.c, RFC 9001 §4):
 * the input plays the peer's CRYPTO stream. First byte: bit 0 picks our
 * role (0: server, the input is a ClientHello and what follows; 1:
 * client, the input is the server's flight), the second byte where the
 * bytes switch from the Initial to the Handshake level. Whatever comes,
 * the session must fail cleanly (an error code for the close) or go on;
 * the transport parameters it hands over are decoded like a connection
 * does.
 */
#include <errno.h>

#include "control/tls/tls.h"
#include "dataplane/engine/tparams.h"
#include "fuzz.h"

static struct dpq_tls_ctx *server_ctx, *client_ctx;
static uint8_t local_tp[2][512];
static size_t local_tp_len[2];

static void
quiet(void *arg, const char *msg)
{
	(void)arg;
	(void)msg;
}

static int
on_secret(void *arg, enum dpq_tls_level level, bool write, uint16_t suite,
		const uint8_t *secret, size_t len)
{
	(void)arg;
	(void)write;
	FUZZ_CHECK(level <= DPQ_TLS_LEVEL_APP);
	FUZZ_CHECK(suite == DPQ_TLS_AES_128_GCM_SHA256 ||
			suite == DPQ_TLS_AES_256_GCM_SHA384 ||
			suite == DPQ_TLS_CHACHA20_POLY1305_SHA256);
	FUZZ_CHECK(len >= 32 && len <= 48 && secret != NULL);
	return 0;
}

static int
on_send(void *arg, enum dpq_tls_level level, const uint8_t *data, size_t len)
{
	(void)arg;
	FUZZ_CHECK(level <= DPQ_TLS_LEVEL_APP);
	FUZZ_CHECK(len == 0 || data != NULL);
	return 0;
}

static uint64_t
on_peer_tparams(void *arg, const uint8_t *data, size_t len)
{
	struct dpq_tparams tp;
	bool *server = arg;

	return dpq_tparams_decode(data, data + len, *server ?
			DPQ_ROLE_CLIENT : DPQ_ROLE_SERVER, NULL, 0, &tp) == 0 ?
		0 : 0x08;	/* TRANSPORT_PARAMETER_ERROR */
}

static const struct dpq_tls_callbacks cb = {
	.on_secret = on_secret,
	.on_send = on_send,
	.on_peer_tparams = on_peer_tparams,
};

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct dpq_tls_ctx_conf conf = { 0 };
	struct dpq_tparams tp;
	int r;

	(void)argc;
	(void)argv;
	conf.alpn[0] = "hq-interop";
	conf.alpn_count = 1;
	conf.self_signed_name = "dpquic.fuzz";
	conf.server_name = "dpquic.fuzz";
	conf.log = quiet;
	conf.role = DPQ_TLS_SERVER;
	if (dpq_tls_ctx_create(&conf, &server_ctx) != 0)
		return 1;
	conf.role = DPQ_TLS_CLIENT;
	if (dpq_tls_ctx_create(&conf, &client_ctx) != 0)
		return 1;
	for (r = 0; r < 2; r++) {
		uint8_t *e;

		dpq_tparams_init_defaults(&tp);
		tp.initial_scid.len = 8;
		tp.present |= DPQ_TP_BIT(DPQ_TP_INITIAL_SCID);
		if (r == 0) {
			tp.original_dcid.len = 8;
			tp.present |= DPQ_TP_BIT(DPQ_TP_ORIGINAL_DCID);
		}
		e = dpq_tparams_encode(local_tp[r], local_tp[r] +
				sizeof(local_tp[r]), r == 0 ? DPQ_ROLE_SERVER :
				DPQ_ROLE_CLIENT, &tp);
		if (e == NULL)
			return 1;
		local_tp_len[r] = (size_t)(e - local_tp[r]);
	}
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dpq_tls *tls = NULL;
	bool server;
	size_t split;
	int rc;

	if (size < 2)
		return 0;
	server = (data[0] & 1) == 0;
	split = data[1];
	data += 2;
	size -= 2;
	if (split > size)
		split = size;
	rc = dpq_tls_new(server ? server_ctx : client_ctx, &cb, &server,
			local_tp[server ? 0 : 1], local_tp_len[server ? 0 : 1],
			&tls);
	FUZZ_CHECK(rc == 0);
	/* A server's ClientHello may come in pieces; so may a flight. */
	rc = dpq_tls_recv(tls, DPQ_TLS_LEVEL_INITIAL, data, split);
	if (rc == 0 && size > split)
		rc = dpq_tls_recv(tls, server ? DPQ_TLS_LEVEL_INITIAL :
				DPQ_TLS_LEVEL_HANDSHAKE, data + split,
				size - split);
	if (rc != 0) {
		FUZZ_CHECK(rc == -EPROTO);
		FUZZ_CHECK(dpq_tls_error_code(tls) != 0);
	}
	(void)dpq_tls_handshake_complete(tls);
	dpq_tls_free(tls);
	return 0;
}
