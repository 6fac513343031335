/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hq-interop server: HTTP/0.9 over QUIC as the QUIC interop runner uses
 * it. On each client-initiated bidirectional stream the client sends
 * "GET /path" ending in CRLF, LF, or just its FIN; the server answers with
 * the file's bytes and FIN, or resets the stream with one of the codes
 * below. Files come from the environment's document root only.
 *
 * Path policy (everything else is refused, nothing outside the root is
 * ever opened):
 *  - the target starts with '/'; it is split on '/' into components,
 *    none empty ("//", trailing '/'), "." or "..";
 *  - %XX escapes are decoded (two hex digits, else BAD_REQUEST); a
 *    decoded '/', NUL or other control byte is FORBIDDEN, so "%2e%2e" is
 *    ".." and refused like it;
 *  - raw control bytes (NUL included) and DEL in the target: FORBIDDEN;
 *  - at most DPQ_HQ_MAX_DEPTH components;
 *  - each component is opened with openat() relative to the previous
 *    directory, starting at the root's fd, with O_NOFOLLOW: a symbolic
 *    link anywhere on the path is FORBIDDEN (no symlinks are followed,
 *    even ones that stay inside the root);
 *  - only regular files are served (directories, FIFOs, devices:
 *    FORBIDDEN); files are opened O_NONBLOCK so a FIFO cannot block.
 *
 * Stream reset codes (application error codes, RESET_STREAM and, when the
 * request was not read to its end, STOP_SENDING). hq has no registry of
 * its own: the first two are HTTP/3's (RFC 9114 §8.1), the others are
 * 0x<HTTP status> so they read like the status they stand for.
 */
#ifndef DPQ_APP_HQ_SERVER_H
#define DPQ_APP_HQ_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "dataplane/app/app.h"

#define DPQ_HQ_ERR_STREAM_CREATION 0x103 /* client uni stream: STOP_SENDING */
#define DPQ_HQ_ERR_CANCELLED	0x10c	/* request abandoned (either side) */
#define DPQ_HQ_ERR_BAD_REQUEST	0x400	/* not "GET /..."; bad %-escape */
#define DPQ_HQ_ERR_FORBIDDEN	0x403	/* path refused (policy above) */
#define DPQ_HQ_ERR_NOT_FOUND	0x404	/* no such file (or no root) */
#define DPQ_HQ_ERR_TOO_LONG	0x414	/* no line end in DPQ_HQ_MAX_REQUEST */
#define DPQ_HQ_ERR_INTERNAL	0x500	/* out of memory, read error */

/* Longest request line, line end included. */
#define DPQ_HQ_MAX_REQUEST	4096
/* Most path components. */
#define DPQ_HQ_MAX_DEPTH	32

/* Parse one request line [p, end) without its line end: "GET <target>".
 * Writes the decoded, checked path, relative to the root ("a/b", NUL
 * terminated) into path (cap bytes). Returns 0 or a DPQ_HQ_ERR_* code. */
uint64_t dpq_hq_parse_request(const uint8_t *p, const uint8_t *end,
		char *path, size_t cap);

/* Open a path from dpq_hq_parse_request() beneath root_fd (-1: none),
 * following no symlink. Returns 0 with *fd (O_RDONLY) and *size, or a
 * DPQ_HQ_ERR_* code. Bounded local file system calls only. */
uint64_t dpq_hq_open(int root_fd, const char *path, int *fd, uint64_t *size);

#endif /* DPQ_APP_HQ_SERVER_H */
