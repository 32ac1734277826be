/*
 * init.c — light initialisation of the shim (DESIGN.md §5): the real table,
 * the log level and the prefix.  No network, no files opened: a program that
 * never touches the prefix pays only this.  The heavy stage (connections,
 * journal) belongs to core/cache and runs on the first call under the prefix.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "shim.h"
#include "sys.h"

__thread int pohm_depth;

/*
 * The prefix as configured (absolute, no trailing slash).  Written once in
 * shim_init() under pthread_once; read-only afterwards.
 */
static char prefix[4096];
static size_t prefix_len;
static pthread_once_t shim_once = PTHREAD_ONCE_INIT;
/* Thread-local: this thread is running shim_init (recursion guard). */
static __thread int in_init;

static void shim_init(void)
{
	const char *p, *lvl;

	in_init = 1;
	pohm_depth++;
	lvl = getenv("POHMELFS_LOG_LEVEL");
	if (lvl && pohm_log_parse_level(lvl) >= 0)
		pohm_log_setup((enum pohm_log_level)pohm_log_parse_level(lvl), -1);
	pohm_real_init();
	p = getenv("POHMELFS_PREFIX");
	if (p && p[0] == '/' && strlen(p) < sizeof(prefix)) {
		prefix_len = strlen(p);
		memcpy(prefix, p, prefix_len + 1);
		while (prefix_len > 1 && prefix[prefix_len - 1] == '/')
			prefix[--prefix_len] = '\0';
	} else if (p && *p) {
		pohm_err("prefix=%s: expected an absolute path; the shim stays inactive", p);
	}
	pohm_depth--;
	in_init = 0;
}

int pohm_enter(void)
{
	if (in_init)
		return -EAGAIN;
	pthread_once(&shim_once, shim_init);
	return 0;
}

int pohm_classify(int dirfd, const char *path)
{
	if (!prefix_len || pohm_depth || !path)
		return 0;
	if (path[0] != '/')
		return 0;	/* relative paths: tracked-cwd classification comes with issue 8 */
	if (strncmp(path, prefix, prefix_len))
		return 0;
	return path[prefix_len] == '/' || path[prefix_len] == '\0';
}

__attribute__((constructor)) static void shim_constructor(void)
{
	pohm_enter();
}
