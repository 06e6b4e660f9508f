/* bin/eval's evaluation: the library's (lm/evaluate.h), and what it prints of
 * the per-position and recall detail (eval_detail_print.c). */
#ifndef LM_EVAL_EVALUATE_H
#define LM_EVAL_EVALUATE_H

#include <stdio.h>

#include "lm/evaluate.h"

/* Prints what `d` measured, and the accuracy when a mask (mask_name, else
 * NULL) chose the tokens: as JSON members that continue an object
 * (",\"accuracy\":...") when json, else as text lines. */
void eval_detail_print(FILE *f, const EvalDetail *d, const EvalResult *r, const char *mask_name, int json);

#endif
