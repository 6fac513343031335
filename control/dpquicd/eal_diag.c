/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * When rte_eal_init() fails its rte_errno is often useless ("Permission
 * denied" for missing hugepages, "Success" for a --file-prefix another
 * process holds). Look at the two usual causes ourselves and say what
 * happened and what to do.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_errno.h>

#include "control/dpquicd/dpquicd.h"

/* Value of --NAME / --NAME=V in argv, or NULL; has: the flag is there. */
static const char *
eal_arg(int argc, char **argv, const char *name, bool *has)
{
	size_t n = strlen(name);
	int i;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (strncmp(a, "--", 2) != 0 || strncmp(a + 2, name, n) != 0)
			continue;
		if (a[2 + n] == '=') {
			*has = true;
			return a + 3 + n;
		}
		if (a[2 + n] == '\0') {
			*has = true;
			return i + 1 < argc ? argv[i + 1] : NULL;
		}
	}
	*has = false;
	return NULL;
}

/* EAL's runtime directory for prefix (eal_create_runtime_dir). */
static void
runtime_dir(const char *prefix, char *buf, size_t n)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");

	if (getuid() == 0)
		snprintf(buf, n, "/var/run/dpdk/%s", prefix);
	else
		snprintf(buf, n, "%s/dpdk/%s", xdg ? xdg : "/tmp", prefix);
}

/* pid of the process holding the primary's lock on config, or 0. */
static pid_t
prefix_holder(const char *dir)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	char path[512];
	int fd;

	snprintf(path, sizeof(path), "%s/config", dir);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (fcntl(fd, F_GETLK, &fl) != 0 || fl.l_type == F_UNLCK)
		fl.l_pid = 0;
	close(fd);
	return fl.l_pid;
}

static long
meminfo(const char *key)
{
	char line[256];
	size_t n = strlen(key);
	long v = -1;
	FILE *f = fopen("/proc/meminfo", "r");

	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, key, n) == 0 && line[n] == ':') {
			v = strtol(line + n + 1, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

/* Is a hugetlbfs mounted (at dir, or anywhere when dir is NULL)? */
static bool
hugetlbfs_mounted_at(const char *dir)
{
	char line[1024], mnt[512], real[PATH_MAX];
	bool found = false;
	FILE *f = fopen("/proc/mounts", "r");

	if (f == NULL)
		return true;	/* cannot tell: do not claim otherwise */
	if (dir != NULL && realpath(dir, real) == NULL)
		snprintf(real, sizeof(real), "%s", dir);
	while (!found && fgets(line, sizeof(line), f) != NULL) {
		if (strstr(line, " hugetlbfs ") == NULL)
			continue;
		found = dir == NULL || (sscanf(line, "%*s %511s", mnt) == 1 &&
				strcmp(mnt, real) == 0);
	}
	fclose(f);
	return found;
}

static bool
hugetlbfs_mounted(void)
{
	return hugetlbfs_mounted_at(NULL);
}

void
dpqd_eal_explain(int argc, char **argv, int rte_err)
{
	bool no_huge, in_mem, no_shconf, has;
	const char *prefix = eal_arg(argc, argv, "file-prefix", &has);
	const char *huge_dir = eal_arg(argc, argv, "huge-dir", &has);
	char dir[300];
	long total, avail;
	pid_t pid;

	eal_arg(argc, argv, "no-huge", &no_huge);
	eal_arg(argc, argv, "in-memory", &in_mem);
	eal_arg(argc, argv, "no-shconf", &no_shconf);
	if (prefix == NULL)
		prefix = "rte";
	runtime_dir(prefix, dir, sizeof(dir));
	if (!in_mem && !no_shconf && (pid = prefix_holder(dir)) != 0 &&
	    pid != getpid()) {
		fprintf(stderr,
"dpquicd: DPDK file prefix \"%s\" is in use by process %d (%s holds its\n"
"  lock): is another dpquicd or DPDK program running? Each DPDK primary\n"
"  process needs its own --file-prefix NAME (config: eal.file-prefix);\n"
"  DPDK's tools then take the same --file-prefix / -f NAME.\n",
			prefix, (int)pid, dir);
		return;
	}
	if (!no_huge && huge_dir != NULL && !hugetlbfs_mounted_at(huge_dir)) {
		fprintf(stderr,
"dpquicd: --huge-dir %s (config: eal.huge-dir) is not a hugetlbfs mount:\n"
"  mount one there (mount -t hugetlbfs -o pagesize=2M nodev %s) or\n"
"  leave --huge-dir out and let DPDK find /dev/hugepages.\n",
			huge_dir, huge_dir);
		return;
	}
	if (!no_huge && !in_mem) {
		total = meminfo("HugePages_Total");
		avail = meminfo("HugePages_Free");
		if (total == 0 || avail == 0 || !hugetlbfs_mounted()) {
			fprintf(stderr,
"dpquicd: DPDK found no usable hugepages (HugePages_Total %ld, free %ld%s).\n"
"  Reserve some and mount hugetlbfs, as root:\n"
"    echo 1024 > /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages\n"
"    mkdir -p /dev/hugepages && mount -t hugetlbfs nodev /dev/hugepages\n"
"  (dpdk-hugepages.py -p 2M --setup 2G does both; make it permanent with\n"
"  vm.nr_hugepages in /etc/sysctl.d/ and an fstab line), or run with\n"
"  --no-huge (config: eal.no-huge = true) for virtual devices and tests.\n",
				total, avail, hugetlbfs_mounted() ? "" :
				", no hugetlbfs mounted");
			return;
		}
	}
	fprintf(stderr, "dpquicd: DPDK EAL initialisation failed: %s (the "
		"EAL: lines above say more; EAL arguments: dpquicd --help "
		"--)\n", rte_err ? rte_strerror(rte_err) : "unknown error");
}
