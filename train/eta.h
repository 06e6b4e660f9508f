/* bin/train's ETA: the pace over a window of the last ETA_WINDOW progress
 * lines, not the last line's alone, which swings with the machine's load
 * (one busy interval read as the pace of the whole run). */
#ifndef LM_TRAIN_ETA_H
#define LM_TRAIN_ETA_H

#include <stddef.h>

#define ETA_WINDOW 8

typedef struct EtaWindow {
    double steps[ETA_WINDOW], wall[ETA_WINDOW], train[ETA_WINDOW]; /* per progress interval */
    size_t n, next;                                                 /* intervals held; the slot to fill next */
} EtaWindow;

/* One interval between progress lines: its steps, its wall seconds (validation
 * and logging included) and its training steps' seconds; the oldest drops out. */
void eta_window_add(EtaWindow *w, double steps, double wall_secs, double train_secs);
/* Wall seconds per step over the window (0 while empty). */
double eta_wall_per_step(const EtaWindow *w);
/* Wall seconds per training second over the window, validation's share (1 while empty). */
double eta_wall_per_train(const EtaWindow *w);

#endif
