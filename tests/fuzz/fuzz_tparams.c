/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Transport parameters (RFC 9000 §7.4, §18): decode a blob as sent by a
 * client or a server (first input byte); what decodes must encode, and
 * decode again to the same encoding; the CID checks of §7.3 must take any
 * decoded set.
 */
#include "dataplane/engine/tparams.h"
#include "fuzz.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t a[DPQ_TPARAMS_MAX_LEN + 512], b[DPQ_TPARAMS_MAX_LEN + 512];
	static const uint64_t keep[2] = { 0xfec0, 0x2ab2 };
	struct dpq_tparams tp, tq;
	struct dpq_cid_auth auth = { 0 };
	enum dpq_role sender;
	uint8_t *ea, *eb;

	if (size < 1)
		return 0;
	sender = (data[0] & 1) ? DPQ_ROLE_SERVER : DPQ_ROLE_CLIENT;
	if (dpq_tparams_decode(data + 1, data + size, sender, keep, 2,
			&tp) != 0)
		return 0;
	auth.peer_scid = tp.initial_scid;
	auth.odcid = tp.original_dcid;
	auth.retry = (data[0] & 2) != 0;
	auth.retry_scid = tp.retry_scid;
	(void)dpq_tparams_check_cids(&tp, sender == DPQ_ROLE_SERVER ?
			DPQ_ROLE_CLIENT : DPQ_ROLE_SERVER, &auth);
	ea = dpq_tparams_encode(a, a + sizeof(a), sender, &tp);
	/* Everything decode accepted is within the ranges encode takes. */
	FUZZ_CHECK(ea != NULL);
	FUZZ_CHECK(dpq_tparams_decode(a, ea, sender, keep, 2, &tq) == 0);
	eb = dpq_tparams_encode(b, b + sizeof(b), sender, &tq);
	FUZZ_CHECK(eb != NULL && eb - b == ea - a &&
			memcmp(a, b, (size_t)(ea - a)) == 0);
	FUZZ_CHECK(tq.present == tp.present);
	return 0;
}
