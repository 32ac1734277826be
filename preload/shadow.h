/*
 * shadow.h — read-only shadow fds on files opened write-only under the
 * prefix (shadow.c has the rules).
 */
#ifndef POHM_PRELOAD_SHADOW_H
#define POHM_PRELOAD_SHADOW_H

#include "hooks.h"

struct stat;

/* The read-only shadow of host fd's inode, opened now if there is none: fd
 * or -errno.  known: fd's stat if the caller has it (NULL: fstat here);
 * fresh: fd was just returned by the host's open (not seen by the host yet),
 * or POHM_HOST_FD_UNCHECKED with known: a kept shadow is returned without
 * its fstat (the caller's push checks it, struct pohm_host_fds). */
int pohm_shadow_get(int fd, const struct stat *known, int fresh);
/* The inode of the shadow host fd's open made (fresh 1 above) while fd
 * still names it in this table: dev, ino and S_IFREG in *st, 0 (no call);
 * else -ENOENT. */
int pohm_shadow_known(int fd, struct stat *st);
/* Immediately before the host's close of fd (known: its stat, or NULL):
 * close the shadow if fd is its inode's last host fd. */
void pohm_shadow_host_closing(int fd, const struct stat *known);
/* Fork phases: the table's lock is not held across fork. */
/* Close the shadows of inodes no fd in the table names any more (the host
 * closed its fds behind our back: a raw SYS_close). */
void pohm_shadow_sweep(void);
void pohm_shadow_atfork(enum pohm_fork_phase phase);

#endif
