/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Logging through rte_log, like every DPDK program: one log type per
 * component (dpquic.daemon, dpquic.ctl, ...; `dpquicd --log-level
 * debug` or log.levels in the config set them), and a log stream that
 * starts each line with the time and the level, so journald, a file or a
 * terminal all show when and how bad. DPDK 22.11's rte_log adds neither.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rte_log.h>

#include "control/dpquicd/dpquicd.h"

RTE_LOG_REGISTER(dpqd_logtype, dpquic.daemon, INFO);
RTE_LOG_REGISTER(dpqd_logtype_ctl, dpquic.ctl, INFO);

static bool timestamps = true;
static bool at_line_start = true;
static FILE *stream;

static const char *
level_name(int l)
{
	static const char *const names[] = { "", "EMERG", "ALERT", "CRIT",
		"ERROR", "WARN", "NOTICE", "INFO", "DEBUG" };

	return l >= 1 && l <= 8 ? names[l] : "";
}

static void
put(const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(STDERR_FILENO, p, n);

		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

/* Called with whole messages (the stream is fully buffered and rte_log
 * flushes after each one). */
static ssize_t
log_write(void *cookie, const char *buf, size_t size)
{
	size_t off = 0;

	(void)cookie;
	while (off < size) {
		const char *nl = memchr(buf + off, '\n', size - off);
		size_t len = nl ? (size_t)(nl - (buf + off)) + 1 : size - off;

		if (at_line_start && timestamps) {
			char pre[64];
			struct timespec ts;
			struct tm tm;
			size_t k;

			clock_gettime(CLOCK_REALTIME, &ts);
			localtime_r(&ts.tv_sec, &tm);
			k = strftime(pre, sizeof(pre), "%Y-%m-%dT%H:%M:%S", &tm);
			snprintf(pre + k, sizeof(pre) - k, ".%03ld %-6s ",
				ts.tv_nsec / 1000000,
				level_name((int)rte_log_cur_msg_loglevel()));
			put(pre, strlen(pre));
		}
		put(buf + off, len);
		at_line_start = nl != NULL;
		off += len;
	}
	return (ssize_t)size;
}

int
dpqd_log_init(void)
{
	static const cookie_io_functions_t io = { .write = log_write };

	stream = fopencookie(NULL, "w", io);
	if (stream == NULL)
		return -1;
	setvbuf(stream, NULL, _IOFBF, 4096);
	return rte_openlog_stream(stream);
}

void
dpqd_log_apply(const struct dpq_conf *c)
{
	uint32_t level;
	unsigned int i;

	timestamps = c->log.timestamps;
	if (dpq_conf_parse_log_level(c->log.level, &level) == 0)
		rte_log_set_level_pattern("dpquic.*", level);
	for (i = 0; i < c->log.levels.n; i++) {
		char pat[256];
		char *colon;

		snprintf(pat, sizeof(pat), "%s", c->log.levels.v[i]);
		colon = strrchr(pat, ':');
		if (colon == NULL)
			continue;
		*colon = '\0';
		if (dpq_conf_parse_log_level(colon + 1, &level) == 0)
			rte_log_set_level_pattern(pat, level);
	}
}
