/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Config section "recovery": loss recovery and congestion control
 * (owned by the recovery work; RFC 9002). A key is one row: see conf.h.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>

#include "control/conf/conf.h"
#include "dataplane/engine/cc.h"

#define F(x) offsetof(struct dpq_conf, recovery.x)

static int
check_cc(const char *val, char *err, size_t n)
{
	const struct dpq_cc_ops *ops;
	size_t i, off;

	if (dpq_cc_find(val) != NULL)
		return 0;
	off = (size_t)snprintf(err, n, "unknown congestion controller "
		"(known:");
	for (i = 0; (ops = dpq_cc_get(i)) != NULL && off < n; i++)
		off += (size_t)snprintf(err + off, n - off, " %s", ops->name);
	if (off < n)
		snprintf(err + off, n - off, ")");
	return -EINVAL;
}

static const struct dpq_conf_key keys[] = {
	{ .name = "cc", .opt = "cc", .type = DPQ_CONF_STR, .off = F(cc),
	  .check = check_cc, .arg = "NAME", .def = "newreno",
	  .help = "congestion controller of new connections" },
};

const struct dpq_conf_section dpq_conf_section_recovery = {
	.name = "recovery", .keys = keys,
	.nkeys = sizeof(keys) / sizeof(keys[0]),
	.help = "Loss recovery and congestion control",
};
