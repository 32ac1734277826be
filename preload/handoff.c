/*
 * handoff.c — the fd table across exec (DESIGN.md §2 "No threads in host
 * processes"): the exec and posix_spawn wrappers give the new image the
 * fds under the prefix that stay open, as POHMELFS_FDTAB=fd:flags:cookie;...
 * (hex), and the new image's light init adopts them and removes the
 * variable from its environment.
 *
 * The environment is built in memory from a raw mmap, with no allocator
 * and no lock, so an exec in a vfork child (which must not take locks)
 * still hands the table over.  Adopted fds have no known place yet: their
 * position is resolved through /proc/self/fd when a path is classified
 * against them (classify.c).
 *
 * Sections: the table as text; the new environment; adopting.
 */
#include "shim.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "sys.h"

/* ------------------------------------------------------------ the table as text */

/* "POHMELFS_FDTAB=fd:flags:cookie;..." for under-prefix fds that survive exec. */
static size_t handoff_table(char *buf, size_t size)
{
	static const char name[] = POHM_FDTAB_ENV "=";
	char *o = buf, *lim = buf + size - 1, *mark;
	int max = pohm_fd_max(), fd;
	struct pohm_fd_info fi;
	long fl;

	if (size < sizeof(name) + 1)
		return 0;
	memcpy(o, name, sizeof(name) - 1);
	o += sizeof(name) - 1;
	mark = o;
	for (fd = 0; fd <= max && o + 40 < lim; fd++) {
		if (!pohm_fd_lookup(fd, &fi))
			continue;
		fl = pohm_sys_fcntl(fd, F_GETFD, 0);
		if (fl < 0 || (fl & FD_CLOEXEC))
			continue;
		o = pohm_put_hex(o, lim, (uint64_t)fd);
		*o++ = ':';
		o = pohm_put_hex(o, lim, fi.flags & ~(unsigned)POHM_FD_INHERITED);
		*o++ = ':';
		o = pohm_put_hex(o, lim, fi.cookie);
		*o++ = ';';
	}
	if (o == mark)
		return 0;
	*o++ = '\0';
	return (size_t)(o - buf);
}

/* ------------------------------------------------------------ the new environment */

/* One of ours, which each exec writes afresh (a stale one is dropped). */
static int is_fdtab(const char *s)
{
	return !strncmp(s, POHM_FDTAB_ENV "=", sizeof(POHM_FDTAB_ENV)) ||
	       !strncmp(s, POHM_WLOCK_ENV "=", sizeof(POHM_WLOCK_ENV));
}

char *const *pohm_exec_env(char *const *envp, int replacing, struct pohm_exec_mem *mem)
{
	size_t n = 0, i, j, tablen, extlen = 0, tabmax, extmax = 4096, size;
	char **out, *tab, *ext, *s;
	int saved = errno, stale = 0, under, idle;	/* the hook below (push, stats) may set it */
	long r;

	mem->map = NULL;
	mem->len = 0;
	if (!pohm_state.on)
		return envp;
	under = pohm_fd_count_under();
	for (n = 0; envp && envp[n]; n++)
		stale |= is_fdtab(envp[n]);
	/* Nothing to hand over, drop or add (the storage side idle, hooks.h):
	 * no mapping either (the common exec of a shell under the shim). */
	idle = pohm_storage_idle();
	if (!under && !stale && (pohm_depth || idle))
		return envp;
	tabmax = 64 + (size_t)under * 48;
	size = (n + 2 + extmax / 2) * sizeof(char *) + tabmax + extmax;
	size = (size + 4095) & ~(size_t)4095;
	r = pohm_sys_mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (r < 0)
		return envp;
	mem->map = (void *)r;
	mem->len = size;
	out = mem->map;
	tab = (char *)mem->map + (n + 2 + extmax / 2) * sizeof(char *);
	ext = tab + tabmax;
	tablen = under ? handoff_table(tab, tabmax) : 0;
	if (!pohm_depth && (under || !idle))
		extlen = pohm_hook_exec_env(ext, extmax, replacing);
	if (!tablen && !stale && !extlen) {
		pohm_exec_env_free(mem);
		errno = saved;
		return envp;
	}
	for (i = j = 0; i < n; i++)
		if (!is_fdtab(envp[i]))
			out[j++] = envp[i];
	if (tablen)
		out[j++] = tab;
	for (s = ext; extlen && s < ext + extlen && *s; s += strlen(s) + 1)
		out[j++] = s;
	out[j] = NULL;
	errno = saved;
	return out;
}

void pohm_exec_env_free(struct pohm_exec_mem *mem)
{
	if (mem->map)
		pohm_sys_munmap(mem->map, mem->len);
	mem->map = NULL;
}

/* ------------------------------------------------------------ adopting */

/* Parse one hex field up to sep; NULL on a malformed entry. */
static const char *get_hex(const char *s, int sep, uint64_t *x)
{
	const char *start = s;

	*x = 0;
	for (; *s && *s != sep; s++) {
		if (*s >= '0' && *s <= '9')
			*x = *x << 4 | (uint64_t)(*s - '0');
		else if (*s >= 'a' && *s <= 'f')
			*x = *x << 4 | (uint64_t)(*s - 'a' + 10);
		else
			return NULL;
	}
	return *s == sep && s > start ? s + 1 : NULL;
}

/* POHMELFS_WLOCKS into pohm_wlocks_in (the storage hooks adopt them). */
static void wlocks_env(void)
{
	const char *s = getenv(POHM_WLOCK_ENV);
	uint64_t fd, ino, ldev, lino;

	if (!s)
		return;
	while (*s && pohm_nwlocks_in < POHM_WLOCK_MAX) {
		if (!(s = get_hex(s, ':', &fd)) || !(s = get_hex(s, ':', &ino)) ||
		    !(s = get_hex(s, ':', &ldev)) || !(s = get_hex(s, ';', &lino)))
			break;
		if (fd > 0x7fffffff)
			continue;
		pohm_wlocks_in[pohm_nwlocks_in].fd = (int)fd;
		pohm_wlocks_in[pohm_nwlocks_in].ino = ino;
		pohm_wlocks_in[pohm_nwlocks_in].ldev = ldev;
		pohm_wlocks_in[pohm_nwlocks_in].lino = lino;
		pohm_nwlocks_in++;
	}
	unsetenv(POHM_WLOCK_ENV);
}

void pohm_fd_adopt_env(void)
{
	const char *s = getenv(POHM_FDTAB_ENV);
	struct pohm_pc_pos deep = { POHM_PC_DEEP, { 0, 0 } };
	struct pohm_fd_info fi;
	uint64_t fd, fl, ck;

	wlocks_env();
	if (!s)
		return;
	while (*s) {
		if (!(s = get_hex(s, ':', &fd)) || !(s = get_hex(s, ':', &fl)) ||
		    !(s = get_hex(s, ';', &ck))) {
			pohm_warn("%s is malformed; the rest of it is ignored", POHM_FDTAB_ENV);
			break;
		}
		if (fd >= (POHM_FDT_NCHUNK << POHM_FDT_SHIFT) || pohm_sys_fcntl((int)fd, F_GETFD, 0) < 0)
			continue;	/* closed on the way (cloexec, or by the program) */
		fi.cookie = ck;
		fi.flags = ((unsigned)fl & (0x7 | POHM_FD_WRONLY)) | POHM_FD_INHERITED;
		pohm_hook_fd_inherited((int)fd, &fi);
		pohm_fd_record((int)fd, &deep, NULL, &fi);
		pohm_debug("inherited fd %d under the prefix (flags %x, cookie %llx)", (int)fd,
			   fi.flags, (unsigned long long)fi.cookie);
	}
	unsetenv(POHM_FDTAB_ENV);
}
