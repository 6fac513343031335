/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Config section "crypto": packet protection of new connections (owned
 * by the key-update work; RFC 9001 §6). A key is one row: see conf.h.
 */
#include <stddef.h>

#include "control/conf/conf.h"

#define F(x) offsetof(struct dpq_conf, crypto.x)

static const struct dpq_conf_key keys[] = {
	{ .name = "key-update", .opt = "key-update", .type = DPQ_CONF_UINT,
	  .off = F(key_update_pkts), .min = 0, .max = UINT64_C(1) << 40,
	  .arg = "N", .def = "0",
	  .help = "start a 1-RTT key update every N packets a connection "
		"sends (0: only before the AEAD's limit)" },
	{ .name = "key-update-gap", .opt = "key-update-gap",
	  .type = DPQ_CONF_SECONDS, .off = F(key_update_gap),
	  .dmin = 0.001, .dmax = 3600, .arg = "S", .def = "1",
	  .help = "least time between two key updates a connection starts "
		"(besides 3 PTO)" },
};

const struct dpq_conf_section dpq_conf_section_crypto = {
	.name = "crypto", .keys = keys,
	.nkeys = sizeof(keys) / sizeof(keys[0]),
	.help = "Packet protection: 1-RTT key updates (RFC 9001 §6)",
};
