/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What parses the control protocol's request lines (control/ctl/json.c,
 * libjansson plus the protocol's limits): any bytes give a value or an
 * error with an offset inside the input; a value written back out with
 * the reply writer must parse again to an equal value and print the same
 * text.
 */
#include <errno.h>
#include <string.h>

#include "control/ctl/json.h"
#include "fuzz.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dpq_json_err err = { 0 };
	struct dpq_json_w w, w2;
	json_t *doc = NULL, *doc2 = NULL;
	const char *p = (const char *)data;
	int rc, len;

	rc = dpq_json_parse(p, size, 8, &doc, &err);
	if (rc != 0) {
		FUZZ_CHECK(doc == NULL);
		FUZZ_CHECK((err.off <= size || err.off == DPQ_JSON_OFF_NONE) &&
				err.msg[0] != '\0');
		FUZZ_CHECK(rc == -EINVAL || rc == -ERANGE || rc == -E2BIG ||
				rc == -ENOMEM);
		return 0;
	}
	FUZZ_CHECK(doc != NULL);
	FUZZ_CHECK(dpq_json_w_init_dyn(&w, 1u << 22) == 0);
	dpq_json_w_val(&w, doc);
	len = dpq_json_w_finish(&w);
	/* Only a reply past the writer's 4 MiB may fail. */
	FUZZ_CHECK(len > 0 || len == -ENOSPC || len == -ENOMEM);
	if (len > 0) {
		rc = dpq_json_parse(w.buf, (size_t)len, 8, &doc2, &err);
		FUZZ_CHECK(rc == 0);
		FUZZ_CHECK(json_equal(doc, doc2));
		FUZZ_CHECK(dpq_json_w_init_dyn(&w2, 1u << 22) == 0);
		dpq_json_w_val(&w2, doc2);
		FUZZ_CHECK(dpq_json_w_finish(&w2) == len &&
				memcmp(w2.buf, w.buf, (size_t)len) == 0);
		dpq_json_w_free(&w2);
	}
	dpq_json_w_free(&w);
	json_decref(doc2);
	json_decref(doc);
	return 0;
}
