/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The daemon's own config sections: server, port, tls, ctl, log, drain,
 * eal. One row per key (see conf.h); --help is generated from these rows,
 * so the help text here is what an operator reads.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "control/conf/conf.h"

#define NKEYS(k) (sizeof(k) / sizeof((k)[0]))

static int
check_retry(const char *val, char *err, size_t n)
{
	return dpq_conf_check_retry(val, err, n);
}

/* The control socket path must fit a sockaddr_un (107 bytes + NUL);
 * "" turns the socket off. */
static int
check_ctl_path(const char *val, char *err, size_t n)
{
	size_t len = strlen(val);

	if (len < 108)
		return 0;
	snprintf(err, n, "path is %zu bytes, a Unix socket path holds at "
		"most 107: choose a shorter one (e.g. under /run/dpquic/)",
		len);
	return -EINVAL;
}

static int
check_level(const char *val, char *err, size_t n)
{
	uint32_t l;

	if (dpq_conf_parse_log_level(val, &l) == 0)
		return 0;
	snprintf(err, n, "expected a log level: emerg, alert, crit, error, "
		"warning, notice, info or debug");
	return -EINVAL;
}

/* The dpquic.* log types (RTE_LOG_REGISTER in control/dpquicd/log.c,
 * control/mgmt, drivers/, dataplane/shard/shard_log.c; ops_config_errors
 * checks this list against `dpquicd --help`). A name of one of ours
 * that matches none is a typo that would silently change nothing. */
static const char *const dpquic_log_types[] = {
	"dpquic.daemon", "dpquic.ctl", "dpquic.mgmt", "dpquic.driver",
	"dpquic.driver.udp", "dpquic.shard", "dpquic.conn", "dpquic.peer",
};

/* "PATTERN:LEVEL", as EAL's --log-level takes it. */
static int
check_type_level(const char *val, char *err, size_t n)
{
	const char *colon = strrchr(val, ':');
	size_t i, len;
	uint32_t l;

	if (colon == NULL || colon == val ||
	    dpq_conf_parse_log_level(colon + 1, &l) != 0) {
		snprintf(err, n, "expected TYPE-PATTERN:LEVEL, e.g. "
			"\"dpquic.shard:debug\" or \"lib.eal:error\"");
		return -EINVAL;
	}
	len = (size_t)(colon - val);
	if (strncmp(val, "dpquic.", 7) != 0 ||
	    strcspn(val, "*?[") < len)
		return 0;	/* DPDK's types, or a pattern */
	for (i = 0; i < NKEYS(dpquic_log_types); i++)
		if (strlen(dpquic_log_types[i]) == len &&
		    strncmp(val, dpquic_log_types[i], len) == 0)
			return 0;
	snprintf(err, n, "no log type %.*s (dpquic's: dpquic.daemon, .ctl, "
		".mgmt, .driver, .driver.udp, .shard, .conn, .peer; or a "
		"pattern such as dpquic.*)", (int)len, val);
	return -EINVAL;
}

/* ---- server ---------------------------------------------------------- */

#define S(x) offsetof(struct dpq_conf, server.x)
static const struct dpq_conf_key server_keys[] = {
	{ .name = "addr", .opt = "addr", .type = DPQ_CONF_ADDR, .off = S(addr),
	  .arg = "IP:PORT", .help = "address the dataplane owns and serves on "
	  "(required)" },
	{ .name = "root", .opt = "root", .type = DPQ_CONF_STR, .off = S(root),
	  .arg = "DIR", .help = "directory served over hq-interop "
	  "(required)" },
	{ .name = "shards", .opt = "shards", .type = DPQ_CONF_UINT,
	  .off = S(shards), .min = 1, .max = 16, .def = "1", .arg = "N",
	  .help = "dataplane shards, one lcore and one port queue each" },
	{ .name = "retry", .opt = "retry", .type = DPQ_CONF_STR,
	  .off = S(retry), .check = check_retry, .def = "auto",
	  .arg = "POLICY", .help = "Retry: auto (while many handshakes are "
	  "half-open) | never | always | rate:N new connections/s (or auto's "
	  "trigger)" },
	{ .name = "allow-no-rss", .opt = "allow-no-rss", .type = DPQ_CONF_BOOL,
	  .off = S(allow_no_rss), .flags = DPQ_CONF_F_FLAG, .def = "false",
	  .help = "several queues on a device without RSS" },
	{ .name = "duration", .opt = "duration", .type = DPQ_CONF_SECONDS,
	  .off = S(duration), .dmin = 0, .dmax = 1e9, .def = "0", .arg = "S",
	  .help = "stop after S seconds (0: run until signalled)" },
	{ .name = "max-connections", .opt = "max-connections",
	  .type = DPQ_CONF_UINT, .off = S(max_connections), .min = 1,
	  .max = 1u << 22, .def = "4096", .arg = "N",
	  .help = "connection slots per shard" },
	{ .name = "mem-budget-mib", .opt = "mem-budget-mib",
	  .type = DPQ_CONF_UINT, .off = S(mem_budget_mib), .min = 16,
	  .max = 1u << 20, .def = "256", .arg = "MIB",
	  .help = "memory budget per shard for its connections (a parked "
	  "one takes about 3.5 KB)" },
	{ .name = "idle-timeout-ms", .opt = "idle-timeout-ms",
	  .type = DPQ_CONF_UINT, .off = S(idle_timeout_ms), .min = 1,
	  .max = 3600000, .def = "30000", .arg = "MS",
	  .help = "max_idle_timeout we announce (RFC 9000 10.1)" },
	{ .name = "poll-sleep-us", .opt = "poll-sleep-us",
	  .type = DPQ_CONF_UINT, .off = S(poll_sleep_us), .min = 0,
	  .max = 10000, .def = "0", .arg = "US",
	  .help = "a shard with nothing to do sleeps up to US microseconds "
	  "between polls (0: busy poll; for machines shared with other "
	  "work)" },
};
const struct dpq_conf_section dpq_conf_section_server = {
	.name = "server", .keys = server_keys, .nkeys = NKEYS(server_keys),
	.help = "What is served",
};

/* ---- port ------------------------------------------------------------ */

#define P(x) offsetof(struct dpq_conf, port.x)
static const struct dpq_conf_key port_keys[] = {
	{ .name = "id", .opt = "port-id", .type = DPQ_CONF_UINT, .off = P(id),
	  .min = 0, .max = 1023, .def = "0", .arg = "P",
	  .help = "DPDK port (from the EAL arguments)" },
	{ .name = "prefix", .opt = "prefix", .type = DPQ_CONF_UINT,
	  .off = P(prefix), .min = 0, .max = 128, .def = "0", .arg = "LEN",
	  .help = "on-link prefix of --addr (0: /24 or /64)" },
	{ .name = "gateway", .opt = "gateway", .type = DPQ_CONF_IP,
	  .off = P(gateway), .arg = "IP",
	  .help = "next hop for off-link peers" },
};
const struct dpq_conf_section dpq_conf_section_port = {
	.name = "port", .keys = port_keys, .nkeys = NKEYS(port_keys),
	.help = "The DPDK port",
};

/* ---- tls -------------------------------------------------------------- */

#define T(x) offsetof(struct dpq_conf, tls.x)
static const struct dpq_conf_key tls_keys[] = {
	{ .name = "cert", .opt = "cert", .type = DPQ_CONF_STR, .off = T(cert),
	  .flags = DPQ_CONF_F_RELOAD, .arg = "FILE",
	  .help = "PEM certificate chain (default: self-signed)" },
	{ .name = "key", .opt = "key", .type = DPQ_CONF_STR, .off = T(key),
	  .flags = DPQ_CONF_F_RELOAD, .arg = "FILE",
	  .help = "PEM private key of --cert" },
	{ .name = "keylog", .opt = "keylog", .type = DPQ_CONF_STR,
	  .off = T(keylog), .flags = DPQ_CONF_F_RELOAD, .arg = "FILE",
	  .help = "NSS key log for Wireshark (secrets: only when asked)" },
};
const struct dpq_conf_section dpq_conf_section_tls = {
	.name = "tls", .keys = tls_keys, .nkeys = NKEYS(tls_keys),
	.help = "TLS",
};

/* ---- ctl ---------------------------------------------------------------- */

#define C(x) offsetof(struct dpq_conf, ctl.x)
static const struct dpq_conf_key ctl_keys[] = {
	{ .name = "path", .opt = "ctl", .type = DPQ_CONF_STR, .off = C(path),
	  .check = check_ctl_path, .def = "/run/dpquic/dpquicd.sock",
	  .arg = "PATH", .help = "control socket (\"\": none)" },
	{ .name = "max-clients", .type = DPQ_CONF_UINT, .off = C(max_clients),
	  .min = 1, .max = 4096, .def = "16",
	  .help = "control clients served at once" },
};
const struct dpq_conf_section dpq_conf_section_ctl = {
	.name = "ctl", .keys = ctl_keys, .nkeys = NKEYS(ctl_keys),
	.help = "Control socket (dpquic-ctl)",
};

/* ---- log ------------------------------------------------------------------ */

#define L(x) offsetof(struct dpq_conf, log.x)
static const struct dpq_conf_key log_keys[] = {
	{ .name = "level", .opt = "log-level", .type = DPQ_CONF_STR,
	  .off = L(level), .check = check_level, .def = "info",
	  .flags = DPQ_CONF_F_RELOAD, .arg = "LEVEL",
	  .help = "level of every dpquic.* log type" },
	{ .name = "levels", .type = DPQ_CONF_STRV, .off = L(levels),
	  .check = check_type_level, .flags = DPQ_CONF_F_RELOAD,
	  .help = "per type, after level: [\"dpquic.shard:debug\", ...]" },
	{ .name = "timestamps", .type = DPQ_CONF_BOOL, .off = L(timestamps),
	  .def = "true", .flags = DPQ_CONF_F_RELOAD,
	  .help = "start each log line with the date and time" },
};
const struct dpq_conf_section dpq_conf_section_log = {
	.name = "log", .keys = log_keys, .nkeys = NKEYS(log_keys),
	.help = "Logging",
};

/* ---- drain ------------------------------------------------------------------ */

#define D(x) offsetof(struct dpq_conf, drain.x)
static const struct dpq_conf_key drain_keys[] = {
	{ .name = "timeout", .type = DPQ_CONF_SECONDS, .off = D(timeout),
	  .dmin = 0, .dmax = 86400, .def = "30", .flags = DPQ_CONF_F_RELOAD,
	  .help = "deadline of `dpquic-ctl drain` without an argument" },
};
const struct dpq_conf_section dpq_conf_section_drain = {
	.name = "drain", .keys = drain_keys, .nkeys = NKEYS(drain_keys),
	.help = "Draining",
};

/* ---- eal ---------------------------------------------------------------------- */

#define E(x) offsetof(struct dpq_conf, eal.x)
static const struct dpq_conf_key eal_keys[] = {
	{ .name = "lcores", .type = DPQ_CONF_STR, .off = E(lcores),
	  .help = "EAL -l: lcores, e.g. \"0-2\" (main lcore first)" },
	{ .name = "main-lcore", .type = DPQ_CONF_UINT, .off = E(main_lcore),
	  .min = 0, .max = 1023, .help = "EAL --main-lcore" },
	{ .name = "vdev", .type = DPQ_CONF_STRV, .off = E(vdev),
	  .help = "EAL --vdev, each: [\"net_tap0,iface=dpq0\"]" },
	{ .name = "allow", .type = DPQ_CONF_STRV, .off = E(allow),
	  .help = "EAL -a, each PCI device: [\"0000:03:00.0\"]" },
	{ .name = "file-prefix", .type = DPQ_CONF_STR, .off = E(file_prefix),
	  .help = "EAL --file-prefix: one per DPDK primary process" },
	{ .name = "memory", .type = DPQ_CONF_UINT, .off = E(memory),
	  .min = 0, .max = 1u << 24, .def = "0",
	  .help = "EAL -m, MB (0: as needed)" },
	{ .name = "no-huge", .type = DPQ_CONF_BOOL, .off = E(no_huge),
	  .def = "false", .help = "EAL --no-huge (no dumpcap then)" },
	{ .name = "no-pci", .type = DPQ_CONF_BOOL, .off = E(no_pci),
	  .def = "false", .help = "EAL --no-pci" },
	{ .name = "in-memory", .type = DPQ_CONF_BOOL, .off = E(in_memory),
	  .def = "false", .help = "EAL --in-memory (no DPDK tools then)" },
	{ .name = "telemetry", .type = DPQ_CONF_BOOL, .off = E(telemetry),
	  .def = "true", .help = "false: EAL --no-telemetry" },
	{ .name = "huge-dir", .type = DPQ_CONF_STR, .off = E(huge_dir),
	  .help = "EAL --huge-dir" },
	{ .name = "args", .type = DPQ_CONF_STRV, .off = E(args),
	  .help = "other EAL arguments, verbatim: [\"--iova-mode=va\"]" },
};
const struct dpq_conf_section dpq_conf_section_eal = {
	.name = "eal", .keys = eal_keys, .nkeys = NKEYS(eal_keys),
	.help = "DPDK EAL (when the command line has no EAL arguments)",
};
