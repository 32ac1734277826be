/*
 * cachekept.c — the namespace's CAS bases kept in cache_dir for the next
 * process (issue 23, decision 0048; pohm_ns_opts.base_note / base_load).
 *
 * `k/<key>`: the bytes of an inode or bucket as a process of this cache
 * last read or wrote them, followed by their SHA-512; the file's mtime is
 * when.  Written in place (open, one write, close): a reader that meets a
 * torn or half-written file finds the checksum wrong and has no base.  Two
 * writers may leave either's bytes: a base is only the expect of a CAS,
 * a stale one costs a read.  No lock, no rename: nothing here is ever the
 * only copy of anything.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cache_int.h"
#include "sys.h"
#include "wire.h"

#define BASE_MAX (1u << 20)	/* bigger objects are not kept (a bucket is ~30 KiB at most) */

static int base_name(char *out, size_t n, const char *key)
{
	int l = snprintf(out, n, "k/%s", key);

	return l > 0 && (size_t)l < n && !strchr(key, '/') ? 0 : -EINVAL;
}

/* The file: data, the version's stamp (8 bytes, little-endian), SHA-512 of both. */
#define TRAILER (8 + POHM_SHA512_LEN)

void cache_base_note(void *arg, const char *key, const struct pohm_kv_val *v)
{
	struct pohm_cache *c = arg;
	char name[POHM_KEY_MAX + 8];
	uint8_t *b;
	int fd, i;

	if (base_name(name, sizeof(name), key))
		return;
	if (!v || v->len > BASE_MAX) {
		pohm_sys_unlinkat(c->j.dirfd, name, 0);
		return;
	}
	b = malloc(v->len + TRAILER);
	if (!b)
		return;
	memcpy(b, v->data, v->len);
	for (i = 0; i < 8; i++)
		b[v->len + i] = (uint8_t)(v->ts_ns >> (8 * i));
	pohm_sha512(b, v->len + 8, b + v->len + 8);
	fd = pohm_journal_open_own(c->j.dirfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC |
				   O_NOFOLLOW);
	if (fd == -ENOENT && !pohm_journal_mkdir_own(c->j.dirfd, "k"))
		fd = pohm_journal_open_own(c->j.dirfd, name, O_WRONLY | O_CREAT | O_TRUNC |
					   O_CLOEXEC | O_NOFOLLOW);
	if (fd >= 0) {
		pohm_sys_write_full(fd, b, v->len + TRAILER);	/* short: a torn base */
		pohm_sys_close(fd);
	}
	free(b);
}

int cache_base_load(void *arg, const char *key, struct pohm_kv_val *out, uint64_t *age_ns)
{
	struct pohm_cache *c = arg;
	uint8_t sum[POHM_SHA512_LEN];
	char name[POHM_KEY_MAX + 8];
	struct timespec now;
	struct stat st;
	uint8_t *b = NULL;
	size_t len;
	int fd, i, r = -ENOENT;

	if (base_name(name, sizeof(name), key))
		return -ENOENT;
	fd = pohm_sys_openat(c->j.dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW, 0);
	if (fd < 0)
		return -ENOENT;
	if (pohm_sys_fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size <= TRAILER ||
	    st.st_size > BASE_MAX + TRAILER)
		goto out;
	len = (size_t)st.st_size - TRAILER;
	b = malloc((size_t)st.st_size);
	if (!b || pohm_sys_pread_full(fd, b, (size_t)st.st_size, 0) != st.st_size)
		goto out;
	pohm_sha512(b, len + 8, sum);
	if (memcmp(sum, b + len + 8, POHM_SHA512_LEN))
		goto out;	/* torn, or being written */
	clock_gettime(CLOCK_REALTIME, &now);
	if (now.tv_sec < st.st_mtim.tv_sec)
		goto out;	/* from the future: the clock moved; not trusted */
	*age_ns = (uint64_t)(now.tv_sec - st.st_mtim.tv_sec) * 1000000000ULL +
		  (uint64_t)now.tv_nsec - (uint64_t)st.st_mtim.tv_nsec;
	out->ts_ns = 0;
	for (i = 0; i < 8; i++)
		out->ts_ns |= (uint64_t)b[len + i] << (8 * i);
	pohm_sha512(b, len, out->csum);
	out->data = b;
	out->len = len;
	b = NULL;
	r = 0;
out:
	free(b);
	pohm_sys_close(fd);
	return r;
}

int cache_base_sweep(struct pohm_cache *c, uint64_t max_age_ns)
{
	char buf[4096];
	struct timespec now;
	ssize_t n;
	int fd, gone = 0;

	fd = pohm_sys_openat(c->j.dirfd, "k", O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW, 0);
	if (fd < 0)
		return fd == -ENOENT ? 0 : fd;
	clock_gettime(CLOCK_REALTIME, &now);
	while ((n = pohm_sys_getdents64(fd, buf, sizeof(buf))) > 0) {
		long off = 0;

		while (off < n) {
			struct dirent64 *de = (struct dirent64 *)(buf + off);
			struct stat st;

			off += de->d_reclen;
			if (de->d_name[0] == '.' ||
			    pohm_sys_fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW))
				continue;
			if ((uint64_t)(now.tv_sec - st.st_mtim.tv_sec) * 1000000000ULL <= max_age_ns &&
			    now.tv_sec >= st.st_mtim.tv_sec)
				continue;
			gone += !pohm_sys_unlinkat(fd, de->d_name, 0);
		}
	}
	pohm_sys_close(fd);
	return n < 0 ? (int)n : gone;
}
