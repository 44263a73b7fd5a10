/*
 * fstree.h - building fake sysfs/procfs trees under a scratch root, for
 * the tests that read them (test_check, test_hwmon, test_inspect).
 * Include after vigil_test.h.  Paths are ROOT/REL; every helper fails the
 * test when the file system refuses.
 */
#ifndef VIGIL_TEST_FSTREE_H
#define VIGIL_TEST_FSTREE_H

#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Create every directory above PATH (not PATH itself, unless it ends in '/'). */
static inline void
mkparents(const char *path)
{
	char buf[PATH_MAX];

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) < 0 && errno != EEXIST)
			fail_msg("mkdir %s: %s", buf, strerror(errno));
		*p = '/';
	}
}

/* Write file ROOT/REL with CONTENT, creating the directories above it. */
static inline void
put(const char *root, const char *rel, const char *content)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	mkparents(path);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(content, f);
	assert_int_equal(fclose(f), 0);
}

/* Create directory ROOT/REL and those above it. */
static inline void
mkdirs(const char *root, const char *rel)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s/", root, rel);
	mkparents(path);
}

/* Make ROOT/REL a symbolic link to TARGET (as sysfs links, often relative). */
static inline void
link_at(const char *root, const char *rel, const char *target)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	mkparents(path);
	assert_int_equal(symlink(target, path), 0);
}

static inline int
rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return flag == FTW_DP ? rmdir(path) : unlink(path);
}

/*
 * PCI device DEV (its directory, "sys/devices/pci0000:3a/0000:3b:00.0")
 * at address BUS: the sys/bus/pci/devices/BUS link to it, and its PCIe
 * link running at its maximum, 16 GT/s x16.
 */
static inline void
put_pci_link(const char *root, const char *dev, const char *bus)
{
	char rel[256], target[256];

	snprintf(rel, sizeof(rel), "sys/bus/pci/devices/%s", bus);
	snprintf(target, sizeof(target), "../../../%s", dev + strlen("sys/"));
	link_at(root, rel, target);
	snprintf(rel, sizeof(rel), "%s/current_link_speed", dev);
	put(root, rel, "16.0 GT/s PCIe\n");
	snprintf(rel, sizeof(rel), "%s/max_link_speed", dev);
	put(root, rel, "16.0 GT/s PCIe\n");
	snprintf(rel, sizeof(rel), "%s/current_link_width", dev);
	put(root, rel, "16\n");
	snprintf(rel, sizeof(rel), "%s/max_link_width", dev);
	put(root, rel, "16\n");
}

/* Remove ROOT/REL, a file, a link or a whole directory. */
static inline void
rm(const char *root, const char *rel)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	assert_int_equal(nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS), 0);
}

/* Remove PATH and everything below it, quietly: for teardown. */
static inline void
rm_rf(const char *path)
{
	(void)nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

#endif
