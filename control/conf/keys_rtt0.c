/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Config sections "tickets" (TLS session tickets, resumption and 0-RTT)
 * and "tokens" (address-validation tokens: Retry and NEW_TOKEN), the
 * server config of control/mgmt/srvcfg.h. A key is one row: see conf.h.
 * Policies reload (SIGHUP, `dpquic-ctl reload`); key files are read at
 * start and by `dpquic-ctl rotate-keys`.
 */
#include <stddef.h>

#include "control/conf/conf.h"

#define NKEYS(k) (sizeof(k) / sizeof((k)[0]))
#define R DPQ_CONF_F_RELOAD

#define K(x) offsetof(struct dpq_conf, tickets.x)
static const struct dpq_conf_key ticket_keys[] = {
	{ .name = "key-file", .opt = "ticket-key", .type = DPQ_CONF_STR,
	  .off = K(key_file), .arg = "FILE",
	  .help = "secret of the session-ticket keys (32-64 random bytes, "
	  "raw or hex, mode 0600); servers sharing it resume each other's "
	  "sessions (default: random at start)" },
	{ .name = "rotation", .type = DPQ_CONF_SECONDS, .off = K(rotation),
	  .dmin = 0, .dmax = 30 * 86400, .def = "43200",
	  .help = "ticket keys rotate every S seconds of wall time (0: only "
	  "with dpquic-ctl rotate-keys); current and previous are accepted" },
	{ .name = "lifetime", .type = DPQ_CONF_SECONDS, .off = K(lifetime),
	  .dmin = 1, .dmax = 7 * 86400, .def = "43200", .flags = R,
	  .help = "ticket lifetime announced to clients (RFC 8446 4.6.1)" },
	{ .name = "early-data", .type = DPQ_CONF_BOOL, .off = K(early_data),
	  .def = "true", .flags = R,
	  .help = "accept 0-RTT data from resuming clients" },
	{ .name = "max-early-data", .type = DPQ_CONF_UINT,
	  .off = K(max_early_data), .min = 1200, .max = UINT32_MAX,
	  .def = "1048576", .flags = R, .arg = "BYTES",
	  .help = "0-RTT bytes a connection takes; later 0-RTT packets are "
	  "dropped and come again as 1-RTT" },
	{ .name = "replay-window", .type = DPQ_CONF_SECONDS,
	  .off = K(replay_window), .dmin = 1, .dmax = 86400, .def = "600",
	  .flags = R,
	  .help = "0-RTT anti-replay window (RFC 8446 8.2): ClientHellos are "
	  "remembered this long; a ticket older than the window's start "
	  "resumes without 0-RTT" },
	{ .name = "replay-entries", .type = DPQ_CONF_UINT,
	  .off = K(replay_entries), .min = 64, .max = 1u << 24,
	  .def = "65536", .flags = R, .arg = "N",
	  .help = "0-RTT ClientHellos remembered per window; when full, "
	  "0-RTT is refused (the handshake still resumes)" },
};
const struct dpq_conf_section dpq_conf_section_tickets = {
	.name = "tickets", .keys = ticket_keys, .nkeys = NKEYS(ticket_keys),
	.help = "Session tickets, resumption and 0-RTT",
};

#define T(x) offsetof(struct dpq_conf, tokens.x)
static const struct dpq_conf_key token_keys[] = {
	{ .name = "key-file", .opt = "token-key", .type = DPQ_CONF_STR,
	  .off = T(key_file), .arg = "FILE",
	  .help = "secret of the address-validation token keys (like "
	  "tickets.key-file); servers sharing it accept each other's "
	  "Retry and NEW_TOKEN tokens" },
	{ .name = "rotation", .type = DPQ_CONF_SECONDS, .off = T(rotation),
	  .dmin = 0, .dmax = 30 * 86400, .def = "43200",
	  .help = "token keys rotate every S seconds (0: only with "
	  "dpquic-ctl rotate-keys)" },
	{ .name = "new-token", .type = DPQ_CONF_BOOL, .off = T(new_token),
	  .def = "true", .flags = R,
	  .help = "give clients a NEW_TOKEN token after the handshake, so "
	  "their next connection skips Retry and the 3x limit" },
	{ .name = "lifetime", .type = DPQ_CONF_SECONDS, .off = T(lifetime),
	  .dmin = 1, .dmax = 30 * 86400, .def = "86400", .flags = R,
	  .help = "NEW_TOKEN tokens are valid this long" },
	{ .name = "retry-lifetime", .type = DPQ_CONF_SECONDS,
	  .off = T(retry_lifetime), .dmin = 1, .dmax = 600, .def = "10",
	  .flags = R, .help = "Retry tokens are valid this long" },
	{ .name = "filter-entries", .type = DPQ_CONF_UINT,
	  .off = T(filter_entries), .min = 64, .max = 1u << 26,
	  .def = "262144", .arg = "N",
	  .help = "NEW_TOKEN tokens remembered as used (8 bytes each); when "
	  "full, tokens are refused and clients are handled as without one" },
	{ .name = "v4-prefix", .type = DPQ_CONF_UINT, .off = T(v4_prefix),
	  .min = 1, .max = 32, .def = "32", .flags = R,
	  .help = "a NEW_TOKEN token is accepted from a client whose IPv4 "
	  "address keeps this many leading bits (below 32: it skips Retry, "
	  "the 3x limit stays)" },
	{ .name = "v6-prefix", .type = DPQ_CONF_UINT, .off = T(v6_prefix),
	  .min = 1, .max = 128, .def = "128", .flags = R,
	  .help = "the same for IPv6" },
};
const struct dpq_conf_section dpq_conf_section_tokens = {
	.name = "tokens", .keys = token_keys, .nkeys = NKEYS(token_keys),
	.help = "Address-validation tokens (Retry, NEW_TOKEN)",
};
