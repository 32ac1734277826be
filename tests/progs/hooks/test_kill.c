/*
 * test_kill.c — the crash-test hook of core/sys (sys.h pohm_sys_test_kill),
 * linked into the test programs only (with test_switch.c, which names the
 * variables): its strong definition replaces the weak no-op that the
 * library (also its test build), the tools and the node carry.
 */
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sys.h"

void pohm_sys_test_kill(enum pohm_test_switch s)
{
	if (pohm_sys_test_switch(s))
		syscall(SYS_kill, pohm_sys_getpid(), SIGKILL);
}
