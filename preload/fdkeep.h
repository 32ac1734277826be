/*
 * fdkeep.h — the library's fds that a program's close_range/closefrom
 * must not close (fdkeep.c has the rule).
 */
#ifndef POHM_PRELOAD_FDKEEP_H
#define POHM_PRELOAD_FDKEEP_H

/* The library's fds in [lo, hi], sorted, into keep[max]: how many. */
int pohm_fdkeep_collect(unsigned lo, unsigned hi, int *keep, int max);

#endif
