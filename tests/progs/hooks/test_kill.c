/*
 * test_kill.c — the crash-test hook of core/sys (sys.h pohm_sys_test_kill),
 * linked into the test programs only: its strong definition replaces the
 * weak no-op that the library, the tools and the node carry.
 */
#include <signal.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sys.h"

void pohm_sys_test_kill(const char *env)
{
	if (getenv(env))
		syscall(SYS_kill, pohm_sys_getpid(), SIGKILL);
}
