/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Config section "fec": the XOR-FEC extension (docs/fec.md), owned by the
 * FEC work. A key is one row: see conf.h.
 *
 * Defaults follow what dpq-bench-fec measured (docs/fec.md §13): the
 * extension is offered and repairs are sent adaptively (none until loss
 * is measured), with the guarded congestion response to repaired losses
 * (§10.1): that cut a 1 MB download's p99 by 27-40% under random loss
 * and costs nothing on a path without loss; handshake flights are sent
 * twice, which is what cut the p99 of short transfers under loss.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "control/conf/conf.h"
#include "dataplane/engine/cc.h"
#include "dataplane/fec/fec.h"
#include "dataplane/fec/xor.h"
#include "dataplane/quic/conn.h"

#define F(x) offsetof(struct dpq_conf, fec.x)

static int
check_policy(const char *val, char *err, size_t n)
{
	struct dpq_fec_policy p;

	if (dpq_fec_policy_parse(val, &p) == 0)
		return 0;
	snprintf(err, n, "expected off, fixed, fixed:K, adaptive or "
		"adaptive:MIN-MAX (K, MIN <= MAX in %d..%d)",
		DPQ_FEC_MIN_GROUP, DPQ_FEC_GROUP_LIMIT);
	return -EINVAL;
}

static int
check_xor(const char *val, char *err, size_t n)
{
	const struct dpq_xor_impl *x;
	size_t i, off;

	if (strcmp(val, "auto") == 0)
		return 0;
	x = dpq_xor_impl_find(val);
	if (x != NULL && x->supported())
		return 0;
	off = (size_t)snprintf(err, n, x != NULL ? "this CPU cannot run it "
		"(here:" : "unknown XOR kernel (here:");
	for (i = 0; (x = dpq_xor_impl_get(i)) != NULL && off < n; i++)
		if (x->supported())
			off += (size_t)snprintf(err + off, n - off, " %s",
					x->name);
	if (off < n)
		snprintf(err + off, n - off, ", or auto)");
	return -EINVAL;
}

static int
check_spec(const char *val, char *err, size_t n)
{
	uint8_t f;

	if (dpq_conn_spec_parse(val, &f) == 0)
		return 0;
	snprintf(err, n, "expected off, all, or a comma list of handshake, "
		"tail, repair");
	return -EINVAL;
}

/* ignore is refused here: an experiment, unsafe on a congested path
 * (docs/fec.md §10.1); only the C API offers it. */
static int
check_cc(const char *val, char *err, size_t n)
{
	enum dpq_cc_fec_reaction r;

	if (dpq_cc_fec_reaction_parse(val, &r) == 0 &&
	    r != DPQ_CC_FEC_IGNORE)
		return 0;
	snprintf(err, n, "expected guarded or loss");
	return -EINVAL;
}

static const struct dpq_conf_key keys[] = {
	{ .name = "max-group", .opt = "fec-max-group", .type = DPQ_CONF_UINT,
	  .off = F(max_group), .min = 0, .max = DPQ_FEC_GROUP_LIMIT,
	  .flags = DPQ_CONF_F_RELOAD, .arg = "N", .def = "64",
	  .help = "largest XOR-FEC group new connections accept, announced "
		  "in the xor_fec transport parameter (0: extension off)" },
	{ .name = "policy", .opt = "fec", .type = DPQ_CONF_STR,
	  .off = F(policy), .check = check_policy,
	  .flags = DPQ_CONF_F_RELOAD, .arg = "POLICY", .def = "adaptive",
	  .help = "XOR-FEC repairs new connections send: off | fixed[:K] | "
		  "adaptive[:MIN-MAX]" },
	{ .name = "spec-retx", .opt = "spec-retx", .type = DPQ_CONF_STR,
	  .off = F(spec_retx), .check = check_spec,
	  .flags = DPQ_CONF_F_RELOAD, .arg = "LIST", .def = "handshake,repair",
	  .help = "datagrams sent twice, spaced (speculative retransmission): "
		  "off, all, or handshake,tail,repair" },
	{ .name = "spec-spacing", .opt = "spec-spacing",
	  .type = DPQ_CONF_SECONDS, .off = F(spec_spacing), .dmin = 0,
	  .dmax = 1, .flags = DPQ_CONF_F_RELOAD, .arg = "S", .def = "0",
	  .help = "delay of a speculative copy (0: a quarter of the RTT, "
		  "2 to 20 ms)" },
	{ .name = "cc", .opt = "fec-cc", .type = DPQ_CONF_STR,
	  .off = F(cc), .check = check_cc, .arg = "REACTION",
	  .def = "guarded",
	  .help = "congestion response to packets the peer rebuilt: guarded "
		  "(a congestion event only with signs of congestion) | loss "
		  "(always, as a loss)" },
	{ .name = "xor", .opt = "fec-xor", .type = DPQ_CONF_STR,
	  .off = F(xor_impl), .check = check_xor, .arg = "KERNEL",
	  .def = "auto",
	  .help = "XOR kernel: auto (the fastest this CPU runs), avx512, "
		  "avx2, sse2, scalar" },
};

const struct dpq_conf_section dpq_conf_section_fec = {
	.name = "fec", .keys = keys,
	.nkeys = sizeof(keys) / sizeof(keys[0]),
	.help = "XOR forward error correction (docs/fec.md)",
};
