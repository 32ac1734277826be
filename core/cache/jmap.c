/*
 * jmap.c — a read-only shared mapping of the start of a journal file
 * (jmap.h): j.slots's level 0 (jslots.c) and x.idx's (jindex.c), where
 * nearly every record and index entry of a cache lives.  A lock-free
 * reader and a writer under its bucket locks copy a bucket from the
 * mapping instead of a pread: the same page cache pages, so a copy sees
 * every pwrite another process (or thread) made before, as a pread
 * would, and a copy racing a pwrite may be torn exactly as a pread may:
 * the callers' checks and their re-read under a read lock stay.  A write
 * lock's fcntl is a full barrier, so a copy under it sees the locked
 * bucket as the last writer left it.
 *
 * Writes stay pwrite: a store into a mapped hole of a sparse file on a
 * full disk is a SIGBUS, where pwrite says ENOSPC.
 *
 * SIGBUS on read: a mapped page past the end of the file faults, so does
 * a hole on a full tmpfs (jmap_holes_read_free below) and a disk's read error
 * (a pread would say EIO: a process whose journal cannot be read from its
 * disk dies at its next journal read instead of revalidating).  The
 * mapping covers only bytes the file had when it was made (one fstat
 * first), and the library never shrinks j.slots or x.idx (growers only
 * ftruncate them longer, under their grow lock).  A file truncated by
 * hand under a running process would kill it on its next read here
 * (before, that read said "no record"): cache_dir is the library's own,
 * mode 0700.  fork: the child inherits the mapping, which stays shared
 * with the file.  exec: gone with the journal, remade by the next
 * process's first read.  A file system that cannot map it: pread, as
 * before.
 */
#include "jmap.h"

#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include "sys.h"

/*
 * Is a read fault on a hole of this file system's files free of any
 * allocation in the file system?  On disk file systems a hole reads as a
 * page of zeros in the page cache (memory, never blocks).  On tmpfs the
 * page cache is the storage: a read fault on a hole allocates a page of
 * the file system, and a full one answers SIGBUS (cache_space.bats test
 * 2, an 8 MiB tmpfs cache).  Overlayfs maps its lower or upper file,
 * which may be tmpfs.  So only the disk file systems known here are
 * mapped; any other is read with pread.
 */
int jmap_holes_read_free(long type)
{
	switch ((unsigned long)type) {
	case 0xEF53:		/* ext2, ext3, ext4 */
	case 0x58465342:	/* xfs */
	case 0x9123683E:	/* btrfs */
	case 0xF2F52010:	/* f2fs */
	case 0x2FC12FC1:	/* zfs */
		return 1;
	default:
		return 0;
	}
}

/* Map [0, len) of fd once; NULL if not mapped (a file too short: not
 * before jmap_grown; a failed fstat or mmap: not in this process). */
static const unsigned char *get(struct jmap *m, int fd, size_t len)
{
	const unsigned char *p = __atomic_load_n(&m->p, __ATOMIC_ACQUIRE), *want = NULL;
	struct statfs sf;
	struct stat st;
	long a;

	if (p || __atomic_load_n(&m->failed, __ATOMIC_RELAXED) || fd < 0)
		return p;
	if (pohm_sys_fstatfs(fd, &sf) || !jmap_holes_read_free((long)sf.f_type) ||
	    pohm_sys_fstat(fd, &st) || st.st_size < (off_t)len) {
		__atomic_store_n(&m->failed, 1, __ATOMIC_RELAXED);
		return NULL;
	}
	a = pohm_sys_mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	if (a < 0 && a > -4096) {
		__atomic_store_n(&m->failed, 1, __ATOMIC_RELAXED);
		return NULL;
	}
	p = (const unsigned char *)a;
	/* Two threads' first reads at once: one mapping stays. */
	if (!__atomic_compare_exchange_n(&m->p, &want, p, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		pohm_sys_munmap((void *)p, len);
		p = want;
	}
	return p;
}

int jmap_read(struct jmap *m, int fd, size_t len, void *b, size_t n, off_t off)
{
	const unsigned char *p;

	if (off < 0 || (size_t)off > len || n > len - (size_t)off)
		return 0;
	p = get(m, fd, len);
	if (!p)
		return 0;
	memcpy(b, p + off, n);
	return 1;
}

void jmap_grown(struct jmap *m)
{
	__atomic_store_n(&m->failed, 0, __ATOMIC_RELAXED);
}

void jmap_close(struct jmap *m, size_t len)
{
	if (m->p)
		pohm_sys_munmap((void *)m->p, len);
	m->p = NULL;
	m->failed = 0;
}
