/*
 * cacheboot.c — the unclean-shutdown rule of the cache (DESIGN.md §2).
 *
 * A file written through the page cache and not yet pushed may be torn
 * after the host lost power: some blocks new, some old, some zero.  Pushing
 * it would spread the damage to every host.  So the cache remembers the
 * boot it last ran in (cache_dir/boot, the hash of the kernel's boot id), and
 * the first process that opens the cache in a new boot marks every file that
 * is dirty at that moment POHM_J_TORN before anything else can touch it.  A
 * torn-suspect file whose contents differ from the synced version is stored
 * as a conflict copy (push.c), never pushed over the committed version; one
 * whose contents turn out equal is simply clean again.
 *
 * A clean shutdown does not need the rule (pohmelfsd pushes at SIGTERM), but
 * it cannot be told from a crash afterwards, so files still dirty after any
 * reboot take the careful path: at worst a conflict copy the user did not
 * need.  Files changed in the new boot are judged by the normal rules, since
 * the mark is set before the first process of the boot runs.
 *
 * POHMELFS_TEST_BOOT_ID (test builds only, sys.h pohm_sys_test_switch;
 * documented in pohmelfs.conf(5)) replaces the kernel's boot id, to simulate a reboot.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "cache_int.h"
#include "sys.h"
#include "wire.h"

uint64_t cache_boot_id(void)
{
	const char *test = pohm_sys_test_switch(POHM_TEST_BOOT_ID);	/* test builds */
	char buf[128];
	uint8_t h[64];
	ssize_t n = 0;
	int fd;

	if (test && *test) {
		n = (ssize_t)strlen(test);
		memcpy(buf, test, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf));
		if ((size_t)n > sizeof(buf))
			n = sizeof(buf);
	} else {
		fd = pohm_sys_openat(AT_FDCWD, "/proc/sys/kernel/random/boot_id", O_RDONLY, 0);
		if (fd < 0)
			return 0;
		n = pohm_sys_read_full(fd, buf, sizeof(buf));
		pohm_sys_close(fd);
		while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
			n--;
		if (n <= 0)
			return 0;
	}
	pohm_sha512(buf, (size_t)n, h);
	return pohm_le64(h) | 1;	/* never 0: 0 means "unknown" */
}

/* The boot recorded in cache_dir/boot: 0 and *id, or -ENOENT/-EIO. */
static int read_boot(struct pohm_journal *j, uint64_t *id)
{
	char buf[40], *end;
	ssize_t n;
	int fd;

	fd = pohm_sys_openat(j->dirfd, "boot", O_RDONLY | O_NOFOLLOW, 0);
	if (fd < 0)
		return fd;
	n = pohm_sys_read_full(fd, buf, sizeof(buf) - 1);
	pohm_sys_close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	*id = strtoull(buf, &end, 16);
	return end == buf || (*end && *end != '\n') ? -EIO : 0;
}

/* Replace cache_dir/boot atomically. */
static int write_boot(struct pohm_journal *j, uint64_t id)
{
	char buf[40], tmp[64];
	int fd, n, r;

	snprintf(tmp, sizeof(tmp), "tmp/boot.%d", (int)pohm_sys_getpid());
	fd = pohm_journal_open_own(j->dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW);
	if (fd < 0)
		return fd;
	n = snprintf(buf, sizeof(buf), "%016" PRIx64 "\n", id);
	r = pohm_sys_write_full(fd, buf, (size_t)n) == n ? pohm_sys_fsync(fd) : -EIO;
	pohm_sys_close(fd);
	if (!r)
		r = pohm_sys_renameat(j->dirfd, tmp, j->dirfd, "boot");
	if (r)
		pohm_sys_unlinkat(j->dirfd, tmp, 0);
	return r;
}

struct mark_ctx {
	struct pohm_cache *c;
	unsigned marked;
};

/* A file dirty now was written in an earlier boot: suspect it. */
static int mark_one(void *arg, struct pohm_jrec *rec)
{
	struct mark_ctx *x = arg;
	struct stat st;
	int d, fd;

	if (!S_ISREG(rec->mode) || !rec->hint[0] || (rec->flags & (POHM_J_STUB | POHM_J_TORN)))
		return 0;
	if (pohm_sys_fstatat(x->c->pfd, rec->hint, &st, AT_SYMLINK_NOFOLLOW) ||
	    (uint64_t)st.st_ino != rec->lino || !S_ISREG(st.st_mode))
		return 0;
	d = pohm_journal_is_dirty(rec, &st);
	if (d == 2) {
		/* A racy timestamp: the contents tell (unreadable: suspect it). */
		fd = pohm_sys_openat(x->c->pfd, rec->hint, O_RDONLY | O_NOFOLLOW | O_NONBLOCK, 0);
		d = fd < 0 || pohm_journal_content_differs(rec, fd, (uint64_t)st.st_size) != 0;
		if (fd >= 0)
			pohm_sys_close(fd);
	}
	if (!d)
		return 0;
	rec->flags |= POHM_J_TORN;
	if (!pohm_journal_put(&x->c->j, rec)) {
		x->marked++;
		pohm_warn("%s: changed before an unclean shutdown and not pushed; it will be kept "
			  "as a conflict copy if it differs from the storage", rec->hint);
	}
	return 0;
}

unsigned pohm_cache_boot_dirty(const struct pohm_cache *c)
{
	return c->boot_dirty;
}

int cache_boot_check(struct pohm_cache *c)
{
	struct mark_ctx x = { c, 0 };
	uint64_t now = cache_boot_id(), was = 0;
	int lfd, r;

	if (!now)
		return 0;	/* no boot id on this system: the rule cannot apply */
	r = read_boot(&c->j, &was);
	if (!r && was == now)
		return 0;	/* the common case: one small read per process */
	lfd = pohm_journal_open_own(c->j.dirfd, "boot.lock", O_RDWR | O_CREAT | O_NOFOLLOW);
	if (lfd < 0)
		return lfd;
	r = pohm_sys_flock(lfd, LOCK_EX);
	if (r)
		goto out;
	/* Again under the lock: another process may have done the scan meanwhile. */
	r = read_boot(&c->j, &was);
	if (!r && was == now)
		goto out;
	if (!r)
		pohm_journal_each(&c->j, mark_one, &x);
	/* A cache without a boot file is new (or older than the rule): nothing to suspect. */
	r = write_boot(&c->j, now);
	c->boot_dirty = x.marked;
	if (x.marked)
		pohm_warn("%u file%s left dirty by an earlier boot", x.marked,
			  x.marked == 1 ? "" : "s");
out:
	pohm_sys_close(lfd);	/* drops the lock */
	return r;
}
