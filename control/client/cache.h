/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The client's server-config cache (DESIGN §1: what a repeat connection
 * needs to skip round trips), one entry per server and ALPN:
 *   a TLS session ticket (control/tls's envelope: resumption, 0-RTT),
 *   whether that ticket allows 0-RTT,
 *   the server's transport parameters to remember (RFC 9000 §7.4.1),
 *   the last NEW_TOKEN token (RFC 9000 §8.1.3: skips Retry and the 3x
 *   limit on the next connection).
 *
 * File format: text, one line per entry,
 *   dpq1 SERVER ALPN SAVED FLAGS TICKET TOKEN TP SUM
 * with SAVED unix seconds, FLAGS hex (1: 0-RTT allowed), the blobs in hex
 * ("-" when absent), SUM the SHA-256 of everything before it on the
 * line. Comments (#) and blank lines are ignored. A line that does not
 * parse or whose sum is wrong (a truncated or damaged file) is dropped,
 * and counted: the other entries still load, and the connection to that
 * server is simply a fresh one. Entries older than 7 days (the longest
 * TLS ticket lifetime, RFC 8446 §4.6.1) are dropped at load.
 *
 * The file holds secrets (a ticket resumes the session): it is created
 * 0600 and replaced atomically (a temporary file in the same directory,
 * then rename), so a crash never leaves half a file behind.
 *
 * Return codes: 0 or a negative errno.
 */
#ifndef DPQ_CLIENT_CACHE_H
#define DPQ_CLIENT_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DPQ_CACHE_SERVER_MAX	80	/* "[v6]:port" */
#define DPQ_CACHE_ALPN_MAX	64
#define DPQ_CACHE_TICKET_MAX	8192
#define DPQ_CACHE_TOKEN_MAX	256
#define DPQ_CACHE_TP_MAX	512
#define DPQ_CACHE_ENTRIES_MAX	256
#define DPQ_CACHE_MAX_AGE	(7u * 86400)

struct dpq_cache_entry {
	char server[DPQ_CACHE_SERVER_MAX];
	char alpn[DPQ_CACHE_ALPN_MAX];
	uint64_t saved;			/* unix seconds */
	bool early;			/* the ticket allows 0-RTT */
	uint8_t ticket[DPQ_CACHE_TICKET_MAX];
	size_t ticket_len;
	uint8_t token[DPQ_CACHE_TOKEN_MAX];
	size_t token_len;
	uint8_t tp[DPQ_CACHE_TP_MAX];
	size_t tp_len;
};

struct dpq_cache_stats {
	unsigned int loaded;		/* entries kept */
	unsigned int damaged;		/* lines dropped: parse or sum */
	unsigned int expired;		/* lines dropped: too old */
};

struct dpq_cache;

/* Read path (a missing file is an empty cache) at now (unix seconds).
 * Returns 0, -ENOMEM, or -errno of reading an existing file. */
int dpq_cache_load(const char *path, uint64_t now, struct dpq_cache **out,
		struct dpq_cache_stats *st);
void dpq_cache_free(struct dpq_cache *c);

/* The entry of server and alpn, or NULL. */
const struct dpq_cache_entry *dpq_cache_find(const struct dpq_cache *c,
		const char *server, const char *alpn);
/* Add or replace the entry of e->server and e->alpn (the oldest entry
 * goes when the cache is full). Returns 0 or -EINVAL (names too long or
 * with spaces). */
int dpq_cache_put(struct dpq_cache *c, const struct dpq_cache_entry *e);
/* Forget server and alpn (e.g. its ticket failed). */
void dpq_cache_drop(struct dpq_cache *c, const char *server,
		const char *alpn);

/* Write the cache to path: 0600, atomically. */
int dpq_cache_save(const struct dpq_cache *c, const char *path);

#endif /* DPQ_CLIENT_CACHE_H */
