/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * TLS 1.3 cipher suites usable with QUIC v1 (RFC 9001 §5.3): the IDs the
 * handshake (control/tls) negotiates and packet protection
 * (dataplane/crypto) maps to its AEADs. Header only, no dependencies.
 */
#ifndef DPQ_CRYPTO_SUITES_H
#define DPQ_CRYPTO_SUITES_H

#define DPQ_TLS_AES_128_GCM_SHA256		0x1301
#define DPQ_TLS_AES_256_GCM_SHA384		0x1302
#define DPQ_TLS_CHACHA20_POLY1305_SHA256	0x1303

#endif /* DPQ_CRYPTO_SUITES_H */
