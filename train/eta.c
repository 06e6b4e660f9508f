/* bin/train's ETA over a window of progress intervals (see eta.h). */
#include "eta.h"

void eta_window_add(EtaWindow *w, double steps, double wall_secs, double train_secs) {
    w->steps[w->next] = steps;
    w->wall[w->next] = wall_secs;
    w->train[w->next] = train_secs;
    w->next = (w->next + 1) % ETA_WINDOW;
    if (w->n < ETA_WINDOW) w->n++;
}

static double sum(const double *x, size_t n) {
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += x[i];
    return s;
}

double eta_wall_per_step(const EtaWindow *w) {
    double steps = sum(w->steps, w->n);
    return steps > 0.0 ? sum(w->wall, w->n) / steps : 0.0;
}

double eta_wall_per_train(const EtaWindow *w) {
    double train = sum(w->train, w->n);
    return train > 0.0 ? sum(w->wall, w->n) / train : 1.0;
}
