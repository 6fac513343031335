/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * errors.c: names of QUIC transport error codes (RFC 9000 §20.1) and of
 * the codec return codes, for logs and qlog.
 */
#include "dataplane/engine/errors.h"

static const char *const te_names[] = {
	[DPQ_TE_NO_ERROR] = "NO_ERROR",
	[DPQ_TE_INTERNAL_ERROR] = "INTERNAL_ERROR",
	[DPQ_TE_CONNECTION_REFUSED] = "CONNECTION_REFUSED",
	[DPQ_TE_FLOW_CONTROL_ERROR] = "FLOW_CONTROL_ERROR",
	[DPQ_TE_STREAM_LIMIT_ERROR] = "STREAM_LIMIT_ERROR",
	[DPQ_TE_STREAM_STATE_ERROR] = "STREAM_STATE_ERROR",
	[DPQ_TE_FINAL_SIZE_ERROR] = "FINAL_SIZE_ERROR",
	[DPQ_TE_FRAME_ENCODING_ERROR] = "FRAME_ENCODING_ERROR",
	[DPQ_TE_TRANSPORT_PARAMETER_ERROR] = "TRANSPORT_PARAMETER_ERROR",
	[DPQ_TE_CONNECTION_ID_LIMIT_ERROR] = "CONNECTION_ID_LIMIT_ERROR",
	[DPQ_TE_PROTOCOL_VIOLATION] = "PROTOCOL_VIOLATION",
	[DPQ_TE_INVALID_TOKEN] = "INVALID_TOKEN",
	[DPQ_TE_APPLICATION_ERROR] = "APPLICATION_ERROR",
	[DPQ_TE_CRYPTO_BUFFER_EXCEEDED] = "CRYPTO_BUFFER_EXCEEDED",
	[DPQ_TE_KEY_UPDATE_ERROR] = "KEY_UPDATE_ERROR",
	[DPQ_TE_AEAD_LIMIT_REACHED] = "AEAD_LIMIT_REACHED",
	[DPQ_TE_NO_VIABLE_PATH] = "NO_VIABLE_PATH",
};

const char *
dpq_transport_error_str(uint64_t code)
{
	if (code < sizeof(te_names) / sizeof(te_names[0]))
		return te_names[code];
	if (DPQ_TE_IS_CRYPTO(code))
		return "CRYPTO_ERROR";
	return "UNKNOWN";
}

const char *
dpq_codec_err_str(int err)
{
	switch (err) {
	case DPQ_ERR_TRUNCATED: return "TRUNCATED";
	case DPQ_ERR_MALFORMED: return "MALFORMED";
	case DPQ_ERR_FIXED_BIT: return "FIXED_BIT";
	case DPQ_ERR_VERSION: return "VERSION";
	case DPQ_ERR_NOSPACE: return "NOSPACE";
	default: return "UNKNOWN";
	}
}
