/* Wall-time accounting per model part (see lm/profile.h). */
#include "lm/profile.h"

#include <string.h>

#include "lm/error.h"
#include "lm/machine.h"

double profile_start(const Profile *prof) { return prof ? wall_seconds() : 0.0; }

void profile_stop(Profile *prof, const char *part, Pass pass, double start) {
    if (!prof) return;
    double dt = wall_seconds() - start;
    size_t i = 0;
    while (i < prof->n_parts && strcmp(prof->name[i], part) != 0) i++;
    if (i == prof->n_parts) {
        if (i == PROFILE_MAX_PARTS) return; /* more parts than the table holds: not counted */
        prof->name[prof->n_parts++] = part;
    }
    prof->seconds[i][pass] += dt;
}

void profile_print(FILE *f, const Profile *prof, double step_seconds) {
    if (prof->steps == 0 || step_seconds <= 0.0) return;
    double per = 1e3 / (double)prof->steps, step_ms = step_seconds * per, counted = 0.0;
    fprintf(f, "profile: %zu steps, ms per step\n", prof->steps);
    fprintf(f, "  %-12s %9s %9s %9s %7s\n", "part", "forward", "backward", "total", "share");
    for (size_t i = 0; i < prof->n_parts; i++) {
        double fw = prof->seconds[i][PASS_FORWARD] * per, bw = prof->seconds[i][PASS_BACKWARD] * per;
        counted += fw + bw;
        fprintf(f, "  %-12s %9.3f %9.3f %9.3f %6.1f%%\n", prof->name[i], fw, bw, fw + bw, 100.0 * (fw + bw) / step_ms);
    }
    fprintf(f, "  %-12s %9s %9s %9.3f %6.1f%%\n", "other", "", "", step_ms - counted, 100.0 * (step_ms - counted) / step_ms);
    fprintf(f, "  %-12s %9s %9s %9.3f\n", "step", "", "", step_ms);
}

void profile_json(FILE *f, const Profile *prof, double step_seconds) {
    if (prof->steps == 0 || step_seconds <= 0.0) {
        fprintf(f, "null");
        return;
    }
    double per = 1e3 / (double)prof->steps, step_ms = step_seconds * per, counted = 0.0;
    fprintf(f, "{\"steps\":%zu,\"step_ms\":%.6g,\"parts\":{", prof->steps, step_ms);
    for (size_t i = 0; i < prof->n_parts; i++) {
        double fw = prof->seconds[i][PASS_FORWARD] * per, bw = prof->seconds[i][PASS_BACKWARD] * per;
        counted += fw + bw;
        fprintf(f, "%s\"%s\":{\"forward_ms\":%.6g,\"backward_ms\":%.6g,\"total_ms\":%.6g,\"share\":%.6g}",
                   i ? "," : "", prof->name[i], fw, bw, fw + bw, 100.0 * (fw + bw) / step_ms);
    }
    fprintf(f, "},\"other\":{\"total_ms\":%.6g,\"share\":%.6g}}", step_ms - counted,
               100.0 * (step_ms - counted) / step_ms);
}
