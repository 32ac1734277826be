/*
 * execdeps.c — what the kernel and the loader open for an exec, without
 * any wrapper seeing it: the interpreter of a "#!" script, an ELF
 * binary's PT_INTERP and the libraries its dynamic section names
 * (DT_NEEDED, found through DT_RPATH, LD_LIBRARY_PATH and DT_RUNPATH,
 * with $ORIGIN).  Before the exec, each of these that lies under the
 * prefix is materialized through the exec lookup hook (DESIGN.md §2), so
 * the kernel and ld.so find real files, not stubs (core/cache/stub.h) or names never
 * listed.
 *
 * Every read is bounded and checked: a hostile or truncated binary gives
 * up quietly (the exec then reports what it reports), never reads out of
 * its buffers.  Only 64-bit little-endian ELF is parsed.  Libraries are
 * followed to their own DT_NEEDED up to DEPTH_MAX levels and MAT_MAX
 * materializations in all.
 */
#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shim.h"
#include "execdeps.h"
#include "sys.h"

#define DEPTH_MAX 4
#define MAT_MAX 64
#define PHNUM_MAX 64
#define DYN_MAX 1024		/* dynamic entries read */
#define NEEDED_MAX 64
#define STR_MAX 1024		/* one string of the string table */

struct deps {
	char *const *envp;
	int mats;		/* materializations so far */
	const char *path;	/* the file exec'd (pohm_exec_deps) */
};

/* Materialize path if it is under the prefix; 1 if it exists locally then. */
static int fetch(struct deps *d, const char *path)
{
	struct pohm_path p;
	struct stat st;

	if (!pohm_claim_ro(AT_FDCWD, path, &p))
		return pohm_sys_fstatat(AT_FDCWD, path, &st, 0) == 0;
	if (d->mats++ >= MAT_MAX)
		return 0;
	pohm_hook_lookup(POHM_PL_EXEC, &p, 0);
	return pohm_sys_fstatat(AT_FDCWD, path, &st, 0) == 0;
}

static int under(const char *path)
{
	struct pohm_path p;

	return pohm_claim_ro(AT_FDCWD, path, &p);
}

static int pread_all(int fd, void *buf, size_t n, uint64_t off)
{
	return off <= (uint64_t)LLONG_MAX && pohm_sys_pread_full(fd, buf, n, (off_t)off) == (ssize_t)n;
}

/* The string at offset off of the string table at file offset stroff, NUL-terminated in out. */
static int read_str(int fd, uint64_t stroff, uint64_t strsz, uint64_t off, char *out)
{
	ssize_t n;
	size_t want;

	if (off >= strsz)
		return 0;
	want = strsz - off < STR_MAX - 1 ? (size_t)(strsz - off) : STR_MAX - 1;
	if (stroff + off < stroff)
		return 0;
	n = pohm_sys_pread_full(fd, out, want, (off_t)(stroff + off));
	if (n <= 0)
		return 0;
	out[n] = '\0';
	return strnlen(out, (size_t)n) < (size_t)n;	/* terminated within what was read */
}

/* A vaddr to a file offset through the PT_LOAD segments; 0 if none maps it. */
static int vaddr_off(const Elf64_Phdr *ph, int n, uint64_t va, uint64_t *off)
{
	int i;

	for (i = 0; i < n; i++)
		if (ph[i].p_type == PT_LOAD && va >= ph[i].p_vaddr &&
		    va - ph[i].p_vaddr < ph[i].p_filesz) {
			*off = ph[i].p_offset + (va - ph[i].p_vaddr);
			return 1;
		}
	return 0;
}

static void one(struct deps *d, const char *path, int depth);

/* Try name in each directory of the ':'-list dirs ($ORIGIN = origin); stop at the first found. */
static int search(struct deps *d, const char *dirs, const char *origin, const char *name,
		  int depth)
{
	char cand[PATH_MAX], dir[PATH_MAX];
	const char *s, *e;
	size_t n;

	for (s = dirs; s && *s; s = *e ? e + 1 : e) {
		e = strchrnul(s, ':');
		n = (size_t)(e - s);
		if (!n || n >= sizeof(dir))
			continue;
		memcpy(dir, s, n);
		dir[n] = '\0';
		if (!strncmp(dir, "$ORIGIN", 7) || !strncmp(dir, "${ORIGIN}", 9)) {
			const char *rest = dir + (dir[1] == '{' ? 9 : 7);

			if ((size_t)snprintf(cand, sizeof(cand), "%s%s/%s", origin, rest, name) >=
			    sizeof(cand))
				continue;
		} else if (strchr(dir, '$')) {
			continue;	/* $LIB, $PLATFORM: not expanded here */
		} else if ((size_t)snprintf(cand, sizeof(cand), "%s/%s", dir, name) >= sizeof(cand)) {
			continue;
		}
		if (!under(cand)) {
			struct stat st;

			if (pohm_sys_fstatat(AT_FDCWD, cand, &st, 0) == 0)
				return 1;	/* the loader stops here, outside the prefix */
			continue;
		}
		if (fetch(d, cand)) {
			one(d, cand, depth + 1);
			return 1;
		}
	}
	return 0;
}

static const char *env_get(char *const *envp, const char *name)
{
	size_t n = strlen(name);

	for (; envp && *envp; envp++)
		if (!strncmp(*envp, name, n) && (*envp)[n] == '=')
			return *envp + n + 1;
	return NULL;
}

static void elf(struct deps *d, int fd, const char *path, int depth)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph[PHNUM_MAX];
	Elf64_Dyn dyn[64];
	uint64_t needed[NEEDED_MAX], strtab = 0, strsz = 0, runpath = 0, rpath = 0, dynoff = 0,
		 dynsz = 0, stroff, got, k;
	int i, nph, nneeded = 0, has_runpath = 0, has_rpath = 0;
	char s[STR_MAX], origin[PATH_MAX], rp[STR_MAX], *slash;
	const char *llp;

	if (!pread_all(fd, &eh, sizeof(eh), 0) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_phentsize != sizeof(Elf64_Phdr) ||
	    eh.e_phnum == 0 || eh.e_phnum > PHNUM_MAX)
		return;
	nph = eh.e_phnum;
	if (!pread_all(fd, ph, (size_t)nph * sizeof(Elf64_Phdr), eh.e_phoff))
		return;
	for (i = 0; i < nph; i++) {
		if (ph[i].p_type == PT_INTERP && ph[i].p_filesz > 1 && ph[i].p_filesz < STR_MAX &&
		    pread_all(fd, s, (size_t)ph[i].p_filesz, ph[i].p_offset)) {
			s[ph[i].p_filesz] = '\0';
			if (s[0] == '/' && under(s))
				fetch(d, s);
		}
		if (ph[i].p_type == PT_DYNAMIC) {
			dynoff = ph[i].p_offset;
			dynsz = ph[i].p_filesz;
		}
	}
	if (!dynsz)
		return;
	if (dynsz > DYN_MAX * sizeof(Elf64_Dyn))
		dynsz = DYN_MAX * sizeof(Elf64_Dyn);
	for (got = 0; got + sizeof(Elf64_Dyn) <= dynsz; got += sizeof(dyn)) {
		size_t want = dynsz - got < sizeof(dyn) ? (size_t)(dynsz - got) : sizeof(dyn);
		size_t cnt = want / sizeof(Elf64_Dyn);

		if (!pread_all(fd, dyn, cnt * sizeof(Elf64_Dyn), dynoff + got))
			return;
		for (k = 0; k < cnt; k++) {
			switch (dyn[k].d_tag) {
			case DT_NULL:
				goto done;
			case DT_NEEDED:
				if (nneeded < NEEDED_MAX)
					needed[nneeded++] = dyn[k].d_un.d_val;
				break;
			case DT_STRTAB:
				strtab = dyn[k].d_un.d_ptr;
				break;
			case DT_STRSZ:
				strsz = dyn[k].d_un.d_val;
				break;
			case DT_RUNPATH:
				runpath = dyn[k].d_un.d_val;
				has_runpath = 1;
				break;
			case DT_RPATH:
				rpath = dyn[k].d_un.d_val;
				has_rpath = 1;
				break;
			}
		}
	}
done:
	if (!nneeded || !strtab || !strsz || !vaddr_off(ph, nph, strtab, &stroff))
		return;
	snprintf(origin, sizeof(origin), "%s", path);
	slash = strrchr(origin, '/');
	if (slash)
		*(slash == origin ? slash + 1 : slash) = '\0';
	else
		snprintf(origin, sizeof(origin), ".");
	rp[0] = '\0';
	if (has_runpath)
		read_str(fd, stroff, strsz, runpath, rp);
	else if (has_rpath)
		read_str(fd, stroff, strsz, rpath, rp);
	llp = env_get(d->envp, "LD_LIBRARY_PATH");
	for (i = 0; i < nneeded && d->mats < MAT_MAX; i++) {
		if (!read_str(fd, stroff, strsz, needed[i], s) || !*s)
			continue;
		if (strchr(s, '/')) {
			if (under(s) && fetch(d, s))
				one(d, s, depth + 1);
			continue;
		}
		if (!has_runpath && search(d, rp, origin, s, depth))
			continue;
		if (search(d, llp, origin, s, depth))
			continue;
		if (has_runpath)
			search(d, rp, origin, s, depth);
	}
}

/* The file at path (already materialized): a script's interpreter, an ELF's interpreter and libraries. */
static void one(struct deps *d, const char *path, int depth)
{
	char head[256 + 1], interp[256 + 1];
	ssize_t n;
	int fd;
	size_t i, j;

	if (depth > DEPTH_MAX)
		return;
	fd = pohm_sys_openat(AT_FDCWD, path, O_RDONLY | O_NONBLOCK | O_NOCTTY, 0);
	if (fd < 0)
		return;
	n = pohm_sys_pread_full(fd, head, sizeof(head) - 1, 0);
	if (n >= 4 && !memcmp(head, ELFMAG, SELFMAG)) {
		elf(d, fd, path, depth);
	} else if (n > 2 && head[0] == '#' && head[1] == '!') {
		head[n] = '\0';
		for (i = 2; i < (size_t)n && (head[i] == ' ' || head[i] == '\t'); i++)
			;
		for (j = 0; i < (size_t)n && head[i] && !strchr(" \t\n", head[i]); i++)
			interp[j++] = head[i];
		interp[j] = '\0';
		if (interp[0] == '/' && under(interp) && fetch(d, interp))
			one(d, interp, depth + 1);
	}
	pohm_sys_close(fd);
}

static long deps_run(void *v)
{
	struct deps *d = v;

	one(d, d->path, 0);
	return 0;
}

/* On the library's stack (stack.c): one() and search() hold ~28 KiB of
 * buffers and nest once per #! interpreter and library. */
void pohm_exec_deps(const char *path, char *const envp[])
{
	struct deps d = { envp, 0, path };
	int saved = errno;

	if (path && *path)
		pohm_stack_run(deps_run, &d);
	errno = saved;
}
