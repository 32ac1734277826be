/*
 * ownfd.h — the registry of the library's own long-lived fds.
 *
 * core/ keeps a few fds open for as long as an object lives: the prefix
 * and staging directories and the journal directory of a cache, the
 * sockets and the wake-up eventfd of a client.  They sit at or above
 * POHM_FD_BASE (sys.h), close-on-exec, in a host process that may close
 * every fd it did not open (close(3..1023), closefrom, close_range) or
 * dup2 onto any number.  Each is registered here with the address of the
 * int that holds it (its "slot"); the interposition layer asks
 * pohm_own_is() before it lets the host close or dup an fd, and
 * pohm_own_evict() before it lets the host dup2 onto one: the fd moves to
 * a free number >= POHM_FD_BASE and its slot is rewritten (atomically),
 * so the owner keeps working on the same open file description.
 *
 * Rules for owners: assign an fd only through pohm_own_set (never store it
 * in the slot yourself), close it only through pohm_own_close, and call
 * pohm_own_close before the slot's memory goes.  A thread that copied the
 * number out of its slot and uses it while another thread of the host
 * dup2s onto that very number uses the host's file for that one call
 * (known limit: doc/notes-s8-procs2.md).
 *
 * Guards: the table is lock-free for readers (pohm_own_is,
 * pohm_own_first_in, async-signal-safe); set, close and evict take one
 * internal mutex (never held across anything but fcntl/close).
 */
#ifndef POHM_CORE_OWNFD_H
#define POHM_CORE_OWNFD_H

/* Store fd in *slot and register it (fd < 0: just store it).  0, or
 * -ENOSPC when the table is full (fd is then stored but not protected). */
int pohm_own_set(int *slot, int fd);
/* Unregister *slot, close its fd if >= 0, set it to -1. */
void pohm_own_close(int *slot);
/* Unregister *slot and set it to -1 without closing its fd: the fd (or
 * -1), the caller's now (to close, or to pohm_own_set into another slot). */
int pohm_own_release(int *slot);
/* 1 if fd is currently a registered fd of the library (lock-free). */
int pohm_own_is(int fd);
/* The lowest registered fd in [lo, hi], or -1 (lock-free). */
int pohm_own_first_in(unsigned lo, unsigned hi);
/* fd (registered) is about to be reused by the host: move it to a free
 * number >= POHM_FD_BASE and rewrite its slot.  The old number stays open
 * (same file) for the host's dup2 to replace atomically; if that dup2
 * fails, the caller closes it.  1 moved, 0 fd is not registered, -errno
 * (no free number: the host's dup2 must fail). */
int pohm_own_evict(int fd);
/* In a fork child: the internal mutex may have been copied held. */
void pohm_own_atfork_child(void);
/* Called with every fd that becomes registered (weak no-op here; the
 * preloaded library defines it to make its fast paths look at fd). */
void pohm_own_noted(int fd);

#endif
