/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * struct dpq_addr helpers: parse and format "IP:port" strings as operators
 * type them on command lines ("192.0.2.1:443", "[2001:db8::1]:443").
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dpquic/driver.h"

/* Longest accepted input: "[" + INET6_ADDRSTRLEN + "]:" + "65535". */
#define DPQ_ADDR_STR_MAX (INET6_ADDRSTRLEN + 8)

static int
parse_port(const char *s, uint16_t *port)
{
	char *end;
	unsigned long v;

	if (*s == '\0' || *s == '-' || *s == '+')
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno != 0 || *end != '\0' || v > 65535)
		return -EINVAL;
	*port = (uint16_t)v;
	return 0;
}

int
dpq_addr_parse(const char *s, struct dpq_addr *out)
{
	char host[DPQ_ADDR_STR_MAX];
	const char *port_str = NULL;
	const char *colon;
	size_t len;

	if (s == NULL || out == NULL)
		return -EINVAL;
	len = strlen(s);
	if (len == 0 || len >= sizeof(host))
		return -EINVAL;
	memset(out, 0, sizeof(*out));

	if (s[0] == '[') {
		/* "[v6]" or "[v6]:port" */
		const char *close = strchr(s, ']');

		if (close == NULL || (size_t)(close - s - 1) >= sizeof(host))
			return -EINVAL;
		memcpy(host, s + 1, close - s - 1);
		host[close - s - 1] = '\0';
		if (close[1] == ':')
			port_str = close + 2;
		else if (close[1] != '\0')
			return -EINVAL;
		if (inet_pton(AF_INET6, host, out->v6) != 1)
			return -EINVAL;
		out->family = AF_INET6;
	} else {
		colon = strchr(s, ':');
		if (colon != NULL && strchr(colon + 1, ':') != NULL) {
			/* bare IPv6 without a port */
			if (inet_pton(AF_INET6, s, out->v6) != 1)
				return -EINVAL;
			out->family = AF_INET6;
			return 0;
		}
		if (colon != NULL) {
			memcpy(host, s, colon - s);
			host[colon - s] = '\0';
			port_str = colon + 1;
		} else {
			memcpy(host, s, len + 1);
		}
		if (inet_pton(AF_INET, host, out->v4) != 1)
			return -EINVAL;
		out->family = AF_INET;
	}
	if (port_str != NULL && parse_port(port_str, &out->port) != 0) {
		memset(out, 0, sizeof(*out));
		return -EINVAL;
	}
	return 0;
}

char *
dpq_addr_format(const struct dpq_addr *a, char *buf, size_t len)
{
	char host[INET6_ADDRSTRLEN];

	if (len == 0)
		return buf;
	switch (a->family) {
	case AF_INET:
		inet_ntop(AF_INET, a->v4, host, sizeof(host));
		snprintf(buf, len, "%s:%u", host, a->port);
		break;
	case AF_INET6:
		inet_ntop(AF_INET6, a->v6, host, sizeof(host));
		snprintf(buf, len, "[%s]:%u", host, a->port);
		break;
	default:
		snprintf(buf, len, "(unset)");
		break;
	}
	return buf;
}

bool
dpq_addr_equal(const struct dpq_addr *a, const struct dpq_addr *b)
{
	if (a->family != b->family || a->port != b->port)
		return false;
	if (a->family == AF_INET)
		return memcmp(a->v4, b->v4, 4) == 0;
	if (a->family == AF_INET6)
		return memcmp(a->v6, b->v6, 16) == 0;
	return true;
}
