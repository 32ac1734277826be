/*
 * execdeps.h — materialize what an exec of a file under the prefix needs
 * (execdeps.c has the rules).
 */
#ifndef POHM_PRELOAD_EXECDEPS_H
#define POHM_PRELOAD_EXECDEPS_H

/* path (materialized, relative to the cwd): fetch its #! interpreter, PT_INTERP and libraries under the prefix. */
void pohm_exec_deps(const char *path, char *const envp[]);

#endif
