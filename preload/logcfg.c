/*
 * logcfg.c — the log's configuration (hooks.h pohm_log_configure): log=
 * and log_level= of a configuration, or POHMELFS_LOG, and the log file's
 * fd registered as an internal fd (fd.c).  Called by light init (init.c)
 * and by heavy init through the storage hooks' glue (hooks_cache.c), so it
 * sits below both: it was init.c's until session 13 broke the preload
 * circle (issue 20).
 */
#include "shim.h"

#include <stdlib.h>

#include "config.h"

void pohm_log_configure(const struct pohm_config *c, int loaded)
{
	static int registered;	/* atomic: the log fd's ifd registration, once */
	const char *path = c ? c->log : NULL, *env = getenv("POHMELFS_LOG");
	int fd;

	if (!loaded && env && *env)
		path = env;	/* the environment overrides the file; the failed load stopped first */
	if (loaded && c)
		pohm_log_set_level((enum pohm_log_level)c->log_level);
	if (!path || !*path)
		return;
	fd = pohm_log_open(path);
	if (fd >= 0 && !__atomic_exchange_n(&registered, 1, __ATOMIC_ACQ_REL))
		pohm_ifd_register(fd);
}
