/* bin/train's progress text (see say.h). */
#include "say.h"

#include <stdarg.h>
#include <stdio.h>

int say_on = 1;

void say(const char *fmt, ...) {
    if (!say_on) return;
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
}
