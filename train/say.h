/* bin/train's progress text on stdout: on unless --json asked for one object instead. */
#ifndef LM_TRAIN_SAY_H
#define LM_TRAIN_SAY_H

extern int say_on;
void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
