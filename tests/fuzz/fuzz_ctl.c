/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What parses the control protocol's request lines (control/ctl/json.c):
 * any bytes give a document or an error with an offset inside the input;
 * a document written back out must parse again and write the same text
 * (the writer is what replies are made with).
 */
#include <errno.h>

#include "control/ctl/json.h"
#include "fuzz.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dpq_json_doc doc = { 0 }, doc2 = { 0 };
	struct dpq_json_w w, w2;
	const char *p = (const char *)data;
	int rc, len;

	rc = dpq_json_parse(&doc, p, p + size, 8);
	if (rc != 0) {
		FUZZ_CHECK(doc.err_off <= size);
		dpq_json_doc_free(&doc);
		return 0;
	}
	FUZZ_CHECK(dpq_json_root(&doc) != NULL);
	FUZZ_CHECK(dpq_json_w_init_dyn(&w, 1u << 22) == 0);
	dpq_json_w_val(&w, dpq_json_root(&doc));
	len = dpq_json_w_finish(&w);
	/* Only a reply past the writer's 4 MiB may fail. */
	FUZZ_CHECK(len > 0 || len == -ENOSPC || len == -ENOMEM);
	if (len > 0) {
		rc = dpq_json_parse(&doc2, w.buf, w.buf + len, 8);
		FUZZ_CHECK(rc == 0);
		FUZZ_CHECK(dpq_json_w_init_dyn(&w2, 1u << 22) == 0);
		dpq_json_w_val(&w2, dpq_json_root(&doc2));
		FUZZ_CHECK(dpq_json_w_finish(&w2) == len &&
				memcmp(w2.buf, w.buf, (size_t)len) == 0);
		dpq_json_w_free(&w2);
	}
	dpq_json_w_free(&w);
	dpq_json_doc_free(&doc2);
	dpq_json_doc_free(&doc);
	return 0;
}
