/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Config section "qlog": per-connection qlog files (README "Seeing
 * connections"). Shards copy trace records (dataplane/quic/trace.h) into a
 * ring; dpquicd's control loop formats them (control/qlog) into
 * DIR/dpquicd-ID.sqlog. `dpquic-ctl qlog ID on|off` traces one connection;
 * `sample` traces one new connection in N from its first packet.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "control/conf/conf.h"

#define F(x) offsetof(struct dpq_conf, qlog.x)

/* "" (no qlog), or an existing directory. */
static int
check_dir(const char *val, char *err, size_t n)
{
	struct stat st;

	if (val[0] == '\0')
		return 0;
	if (stat(val, &st) != 0) {
		snprintf(err, n, "%s (create the directory, or \"\" for no "
			"qlog)", strerror(errno));
		return -EINVAL;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(err, n, "not a directory");
		return -EINVAL;
	}
	return 0;
}

static const struct dpq_conf_key keys[] = {
	{ .name = "dir", .opt = "qlog-dir", .type = DPQ_CONF_STR,
	  .off = F(dir), .check = check_dir, .flags = DPQ_CONF_F_RELOAD, .arg = "DIR",
	  .def = "",
	  .help = "directory of the qlog files (dpquicd-ID.sqlog, qlog 0.3 "
		  "JSON-SEQ); \"\": no qlog" },
	{ .name = "sample", .opt = "qlog-sample", .type = DPQ_CONF_UINT,
	  .off = F(sample), .min = 0, .max = 1000000,
	  .flags = DPQ_CONF_F_RELOAD, .arg = "N", .def = "0",
	  .help = "trace one new connection in N from its first packet "
		  "(0: only those `dpquic-ctl qlog ID on` asks for)" },
};

const struct dpq_conf_section dpq_conf_section_qlog = {
	.name = "qlog", .keys = keys,
	.nkeys = sizeof(keys) / sizeof(keys[0]),
	.help = "Per-connection qlog files",
};
