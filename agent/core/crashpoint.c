/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/core/crashpoint.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "agent/core/log.h"

static const char *crash_at;

void ag_crashpoint_init(void)
{
        const char *p = getenv(AG_CRASHPOINT_ENV);
        crash_at = p != NULL && p[0] != '\0' ? p : NULL;
        if (crash_at != NULL)
                log_warning("test hook %s is set: the agent kills itself at the point \"%s\"",
                            AG_CRASHPOINT_ENV, crash_at);
}

void ag_crash_point(const char *name)
{
        if (crash_at == NULL || strcmp(crash_at, name) != 0)
                return;
        log_warning("test hook %s: crash point \"%s\" reached, SIGKILL", AG_CRASHPOINT_ENV, name);
        raise(SIGKILL);
}
