/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The hq-interop request line (HTTP/0.9 "GET /path"): any bytes give a
 * code; an accepted path is relative, NUL-terminated inside its buffer,
 * and has no "." / ".." component or empty component (the server opens
 * it beneath its root).
 */
#include "dataplane/app/hq_server.h"
#include "fuzz.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[DPQ_HQ_MAX_REQUEST + 1];
	unsigned int depth = 0;
	const char *c;
	uint64_t rc;

	memset(path, 0x7f, sizeof(path));
	rc = dpq_hq_parse_request(data, data + size, path, sizeof(path));
	if (rc != 0) {
		FUZZ_CHECK(rc >= DPQ_HQ_ERR_BAD_REQUEST &&
				rc <= DPQ_HQ_ERR_INTERNAL);
		return 0;
	}
	FUZZ_CHECK(memchr(path, '\0', sizeof(path)) != NULL);
	FUZZ_CHECK(path[0] != '/');
	for (c = path; *c != '\0'; c++)
		FUZZ_CHECK((unsigned char)*c >= 0x20 && *c != 0x7f);
	for (c = path; *c != '\0';) {
		size_t n = strcspn(c, "/");

		FUZZ_CHECK(n > 0);
		if (++depth > DPQ_HQ_MAX_DEPTH)
			FUZZ_CHECK(0);
		c += n + (c[n] == '/');
	}
	for (c = path; *c != '\0';) {
		size_t n = strcspn(c, "/");

		FUZZ_CHECK(!(n == 1 && c[0] == '.'));
		FUZZ_CHECK(!(n == 2 && c[0] == '.' && c[1] == '.'));
		c += n;
		if (*c == '/') {
			c++;
			FUZZ_CHECK(*c != '/' && *c != '\0');
		}
	}
	return 0;
}
