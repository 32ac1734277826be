/*
 * open.c — the open family: open/open64/openat/openat64, the fortified
 * __open_2 names, creat/creat64.  The mode argument is read whenever the
 * flags need one (O_CREAT or O_TMPFILE), and va_end is called on every path.
 * Calls under the prefix will be handed to core/cache (issue 8); until then
 * everything goes to libc.
 */
#include <stdarg.h>

#include "shim.h"

static int needs_mode(int flags)
{
	return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE;
}

/* Every open-family wrapper funnels here. */
static int do_openat(int dirfd, const char *path, int flags, mode_t mode)
{
	if (pohm_enter() < 0 || !pohm_real.openat)
		return pohm_ret(pohm_fallback_openat(dirfd, path, flags, mode));
	return pohm_real.openat(dirfd, path, flags, mode);
}

#define MODE_ARG(flags, mode) do {		\
	va_list ap;				\
	va_start(ap, flags);			\
	if (needs_mode(flags))			\
		mode = va_arg(ap, mode_t);	\
	va_end(ap);				\
} while (0)

POHM_EXPORT int open(const char *path, int flags, ...)
{
	mode_t mode = 0;

	MODE_ARG(flags, mode);
	return do_openat(AT_FDCWD, path, flags, mode);
}

POHM_EXPORT int open64(const char *path, int flags, ...)
{
	mode_t mode = 0;

	MODE_ARG(flags, mode);
	return do_openat(AT_FDCWD, path, flags | O_LARGEFILE, mode);
}

POHM_EXPORT int openat(int dirfd, const char *path, int flags, ...)
{
	mode_t mode = 0;

	MODE_ARG(flags, mode);
	return do_openat(dirfd, path, flags, mode);
}

POHM_EXPORT int openat64(int dirfd, const char *path, int flags, ...)
{
	mode_t mode = 0;

	MODE_ARG(flags, mode);
	return do_openat(dirfd, path, flags | O_LARGEFILE, mode);
}

/* _FORTIFY_SOURCE entry points: called when the compiler saw no mode. */
POHM_EXPORT int __open_2(const char *path, int flags)
{
	return do_openat(AT_FDCWD, path, flags, 0);
}

POHM_EXPORT int __open64_2(const char *path, int flags)
{
	return do_openat(AT_FDCWD, path, flags | O_LARGEFILE, 0);
}

POHM_EXPORT int __openat_2(int dirfd, const char *path, int flags)
{
	return do_openat(dirfd, path, flags, 0);
}

POHM_EXPORT int __openat64_2(int dirfd, const char *path, int flags)
{
	return do_openat(dirfd, path, flags | O_LARGEFILE, 0);
}

POHM_EXPORT int creat(const char *path, mode_t mode)
{
	return do_openat(AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, mode);
}

POHM_EXPORT int creat64(const char *path, mode_t mode)
{
	return do_openat(AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC | O_LARGEFILE, mode);
}
