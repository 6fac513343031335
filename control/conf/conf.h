/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpq_conf is dpquicd's configuration: one table of keys, grouped in
 * sections, that the config file, the command line and `dpquic-ctl
 * config` all go through, so that a key is parsed, checked, documented
 * and reloaded in one place.
 *
 * The file is read with libconfig (Debian's libconfig-dev), chosen over
 * DPDK's rte_cfgfile and libjansson because it is the one that can say
 * where every value came from: config_setting_source_line() gives the
 * line of each setting, so every error names file, line and key.
 * rte_cfgfile keeps no line numbers once loaded, skips lines that have
 * no '=' without a word and cuts values at 255 bytes; jansson reports
 * lines for syntax errors only, and JSON has no comments, so an example
 * file could not be documented line by line. One flaw of Debian's
 * libconfig 1.5 is worked around here: an integer literal beyond 32 bits
 * is silently wrapped, so integer settings are checked against the
 * literal on their source line (see conf.c).
 *
 * Syntax (libconfig): sections are groups, keys are settings.
 *
 *   server = {
 *     addr = "198.18.0.2:443";
 *     shards = 2;
 *   };
 *   eal = { lcores = "0-2"; vdev = [ "net_tap0,iface=dpq0" ]; };
 *
 * Values may be given as libconfig ints, floats, booleans or strings; all
 * of them are turned into text and parsed by the key's own parser, the
 * same one the command line uses, so `shards = "2x"` and `--shards 2x`
 * get the same error.
 *
 * Adding keys (the extension point for other areas): a section is a
 * struct in struct dpq_conf below and a key table in its own file
 * (control/conf/keys_<section>.c, see keys_recovery.c for the pattern);
 * list the table in sections[] (conf.c). A key names its field
 * by offset, its parser (a type, or a check function for strings), the
 * command-line option if it has one, and whether a reload may change it
 * while running (DPQ_CONF_F_RELOAD: the daemon then applies it in
 * control/dpquicd/reload.c; without it a changed value is reported as
 * "needs a restart").
 *
 * Return codes: 0 or a negative errno (-EINVAL bad value or unknown key,
 * -ENOENT missing file, -ENOMEM); err receives one line for a person:
 * "FILE:LINE: section.key: what is wrong (what is allowed)".
 */
#ifndef DPQ_CONTROL_CONF_H
#define DPQ_CONTROL_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "dpquic/driver.h"

/* Longest error message, and the most keys all sections may have. */
#define DPQ_CONF_ERR_MAX	512
#define DPQ_CONF_KEYS_MAX	128

/* dpquicd's exit codes (also in dpquicd(8) and the systemd unit). */
enum dpq_exit {
	DPQ_EXIT_OK = 0,	/* clean run, stopped by signal or --duration */
	DPQ_EXIT_RUNTIME = 1,	/* failure after start-up */
	DPQ_EXIT_CONFIG = 2,	/* bad command line or configuration */
	DPQ_EXIT_EAL = 3,	/* DPDK EAL init failed (hugepages, prefix) */
	DPQ_EXIT_PORT = 4,	/* the DPDK port could not be set up */
	DPQ_EXIT_CTL = 5,	/* the control socket could not be created */
	DPQ_EXIT_TLS = 6,	/* certificate or key could not be loaded */
};

/* A list of strings (e.g. several --vdev). */
struct dpq_conf_strv {
	unsigned int n;
	char **v;
};

enum dpq_conf_type {
	DPQ_CONF_BOOL,		/* bool: true/false, yes/no, on/off, 1/0 */
	DPQ_CONF_UINT,		/* uint64_t in [min, max], decimal */
	DPQ_CONF_SECONDS,	/* double, seconds in [dmin, dmax] */
	DPQ_CONF_STR,		/* char *, checked by check() if set */
	DPQ_CONF_STRV,		/* struct dpq_conf_strv, each checked */
	DPQ_CONF_ADDR,		/* struct dpq_addr "IP:PORT", port != 0 */
	DPQ_CONF_IP,		/* struct dpq_addr "IP", no port */
};

/* Flags of a key. */
#define DPQ_CONF_F_RELOAD	0x1	/* applied by a reload */
#define DPQ_CONF_F_FLAG		0x2	/* option takes no argument: true */

struct dpq_conf_key {
	const char *name;	/* in its section: [a-z][a-z0-9-]* */
	const char *opt;	/* long command-line option, or NULL */
	enum dpq_conf_type type;
	size_t off;		/* field in struct dpq_conf */
	uint64_t min, max;	/* DPQ_CONF_UINT */
	double dmin, dmax;	/* DPQ_CONF_SECONDS */
	/* DPQ_CONF_STR/STRV: 0 or -EINVAL with a reason in err (what is
	 * allowed); NULL: any non-empty string. */
	int (*check)(const char *val, char *err, size_t n);
	unsigned int flags;
	const char *arg;	/* argument name in --help ("N", "IP:PORT") */
	const char *help;	/* one line */
	const char *def;	/* default as text, NULL: none */
};

struct dpq_conf_section {
	const char *name;
	const struct dpq_conf_key *keys;
	unsigned int nkeys;
	const char *help;
};

/* Where a value came from. */
enum dpq_conf_origin {
	DPQ_CONF_DEFAULT = 0,
	DPQ_CONF_FILE,
	DPQ_CONF_CLI,
};

struct dpq_conf_src {
	enum dpq_conf_origin origin;
	unsigned int line;	/* DPQ_CONF_FILE */
};

/* ---- sections ------------------------------------------------------- */

/* [eal]: EAL arguments when the command line gives none before "--". */
struct dpq_conf_eal {
	char *lcores;			/* -l */
	uint64_t main_lcore;		/* --main-lcore (when set) */
	struct dpq_conf_strv vdev;	/* --vdev, each */
	struct dpq_conf_strv allow;	/* -a PCI device, each */
	char *file_prefix;		/* --file-prefix */
	uint64_t memory;		/* -m MB; 0: EAL's default */
	bool no_huge, no_pci, in_memory, telemetry;
	char *huge_dir;			/* --huge-dir */
	struct dpq_conf_strv args;	/* anything else, verbatim */
};

/* [server]: what is served and by how many shards. */
struct dpq_conf_server {
	struct dpq_addr addr;
	char *root;
	uint64_t shards;
	char *retry;			/* never | always | rate:N */
	bool allow_no_rss;
	double duration;		/* 0: until signalled */
	uint64_t max_connections;	/* per shard */
	uint64_t mem_budget_mib;	/* per shard */
	uint64_t idle_timeout_ms;
	uint64_t poll_sleep_us;		/* 0: busy poll */
};

/* [port]: the DPDK port and the addressing around --addr. */
struct dpq_conf_port {
	uint64_t id;
	uint64_t prefix;		/* 0: /24 or /64 */
	struct dpq_addr gateway;	/* family 0: none */
};

/* [tls]: the server certificate and the key log. */
struct dpq_conf_tls {
	char *cert, *key;		/* NULL both: self-signed */
	char *keylog;			/* NULL: none */
};

/* [ctl]: the control socket. */
struct dpq_conf_ctl {
	char *path;			/* "": no control socket */
	uint64_t max_clients;
};

/* [log]: levels of the dpquic log types (rte_log). */
struct dpq_conf_log {
	char *level;			/* every dpquic.* type */
	struct dpq_conf_strv levels;	/* "TYPE-PATTERN:LEVEL", each */
	bool timestamps;
};

/* [drain]: dpquic-ctl drain and shutdown. */
struct dpq_conf_drain {
	double timeout;			/* default drain deadline */
};

/* [recovery]: loss recovery and congestion control (keys_recovery.c). */
struct dpq_conf_recovery {
	char *cc;
};

/* [fec]: the XOR-FEC extension (keys_fec.c, docs/fec.md). */
struct dpq_conf_fec {
	uint64_t max_group;		/* 0: extension off */
	char *policy;			/* dpq_fec_policy_parse() text */
	char *xor_impl;			/* auto or a dpq_xor_impl name */
	char *spec_retx;		/* dpq_conn_spec_parse() text */
	double spec_spacing;		/* seconds; 0: automatic */
	char *cc;			/* guarded | loss (docs/fec.md §10.1) */
};

/* [crypto]: packet protection of new connections (keys_crypto.c). */
struct dpq_conf_crypto {
	uint64_t key_update_pkts;	/* 0: only before the AEAD limit */
	double key_update_gap;		/* seconds between our updates */
};

/* [tickets]: TLS session tickets and 0-RTT (keys_rtt0.c). */
struct dpq_conf_tickets {
	char *key_file;			/* NULL: random secret at start */
	double rotation;		/* s; 0: only on command */
	double lifetime;		/* s */
	bool early_data;
	uint64_t max_early_data;	/* bytes */
	double replay_window;		/* s */
	uint64_t replay_entries;
};

/* [tokens]: address-validation tokens (keys_rtt0.c). */
struct dpq_conf_tokens {
	char *key_file;
	double rotation;
	bool new_token;
	double lifetime;		/* NEW_TOKEN tokens, s */
	double retry_lifetime;		/* Retry tokens, s */
	uint64_t filter_entries;	/* NEW_TOKEN replay filter */
	uint64_t v4_prefix, v6_prefix;
};

/* [qlog]: per-connection qlog files (keys_qlog.c). */
struct dpq_conf_qlog {
	char *dir;			/* "": no qlog files */
	uint64_t sample;		/* one new connection in N; 0: none */
};

struct dpq_conf {
	char *file;			/* config file read, or NULL */
	struct dpq_conf_eal eal;
	struct dpq_conf_server server;
	struct dpq_conf_port port;
	struct dpq_conf_tls tls;
	struct dpq_conf_ctl ctl;
	struct dpq_conf_log log;
	struct dpq_conf_drain drain;
	struct dpq_conf_recovery recovery;
	struct dpq_conf_fec fec;
	struct dpq_conf_crypto crypto;
	struct dpq_conf_qlog qlog;
	struct dpq_conf_tickets tickets;
	struct dpq_conf_tokens tokens;
	struct dpq_conf_src src[DPQ_CONF_KEYS_MAX];
};

extern const unsigned int dpq_conf_nsections;

/* Key tables, one per section file. */
extern const struct dpq_conf_section dpq_conf_section_recovery;
extern const struct dpq_conf_section dpq_conf_section_fec;
extern const struct dpq_conf_section dpq_conf_section_crypto;
extern const struct dpq_conf_section dpq_conf_section_qlog;
extern const struct dpq_conf_section dpq_conf_section_tickets;
extern const struct dpq_conf_section dpq_conf_section_tokens;

/* ---- API -------------------------------------------------------------- */

/* Defaults (every key's def). */
int dpq_conf_init(struct dpq_conf *c);
void dpq_conf_free(struct dpq_conf *c);

/* Read FILE over c (keys it sets replace c's values; lists are replaced,
 * not appended). Unknown sections and keys, wrong types and bad values
 * are errors. */
int dpq_conf_load_file(struct dpq_conf *c, const char *path, char *err,
		size_t n);

/* Set one key from text ("section.key" or a key found by its option):
 * lists get the value appended when origin is DPQ_CONF_CLI, replaced
 * otherwise. */
int dpq_conf_set(struct dpq_conf *c, const char *dotted, const char *val,
		enum dpq_conf_origin origin, char *err, size_t n);

/* The key and section of a long option, or NULL. */
const struct dpq_conf_key *dpq_conf_find_opt(const char *opt,
		const struct dpq_conf_section **sec);
/* The key of "section.key", or NULL. */
const struct dpq_conf_key *dpq_conf_find(const char *dotted,
		const struct dpq_conf_section **sec);

/* Rules across keys (server.addr and server.root given, tls.cert with
 * tls.key). Run after the file and the command line are applied. */
int dpq_conf_check(const struct dpq_conf *c, char *err, size_t n);

/* A key's value as text (lists comma-separated); "" when unset. */
int dpq_conf_format(const struct dpq_conf *c, const struct dpq_conf_key *k,
		char *buf, size_t n);
/* Where key k's value came from ("default", "FILE:LINE", "command line"). */
const char *dpq_conf_origin_str(const struct dpq_conf *c,
		const struct dpq_conf_key *k, char *buf, size_t n);

/* Exchange key k's value (and origin) between a and b. */
void dpq_conf_swap(struct dpq_conf *a, struct dpq_conf *b,
		const struct dpq_conf_key *k);

/* Was key "section.key" set by the file or the command line? */
bool dpq_conf_is_set(const struct dpq_conf *c, const char *dotted);

/* Visit every key (sections in order). */
void dpq_conf_foreach(void (*fn)(void *arg, const struct dpq_conf_section *s,
		const struct dpq_conf_key *k), void *arg);

/* The options part of --help, from the table. */
void dpq_conf_print_options(FILE *f);

/* Parse a strict unsigned decimal integer ("12", not "12x", "-1", " 1",
 * "0x1"): 0 or -EINVAL / -ERANGE. Shared with the programs' options. */
int dpq_conf_parse_u64(const char *s, uint64_t *out);
/* Parse a finite, non-negative decimal number of seconds ("1.5"). */
int dpq_conf_parse_seconds(const char *s, double *out);

/* The retry policy's text form: "never", "always", "rate:N" (N >= 1). */
int dpq_conf_check_retry(const char *val, char *err, size_t n);
/* A log level name (emerg..debug) or its number 1..8. */
int dpq_conf_parse_log_level(const char *s, uint32_t *level);

#endif /* DPQ_CONTROL_CONF_H */
