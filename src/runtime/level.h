/* The instruction-set level (lm/cpu.h's levels) a kernel template is
 * compiled for.
 *
 * A kernel template, src/WING/NAME_kernel.h, is no file's header: the
 * Makefile compiles it once per level of the architecture (portable, avx2
 * and avx512 on x86-64; portable and neon on ARM64), into NAME.LEVEL.o,
 * with -DLM_LEVEL=LEVEL and that level's flags (-mavx2 -mfma, ...). The
 * template names what it defines after the level, so that CPU_ISA_BY_LEVEL
 * (lm/cpu.h) finds each level's, and picks its vector widths by level:
 *   LEVEL_NAME(vec_loops)   vec_loops_avx2 (at -DLM_LEVEL=avx2)
 *   LEVEL_STRING            "avx2"
 *   #if LEVEL_IS(avx512)    this compilation is avx512's */
#ifndef LM_LEVEL_H
#define LM_LEVEL_H

#ifndef LM_LEVEL
#error "a kernel template is compiled by the Makefile, once per level (-DLM_LEVEL=portable, avx2, avx512 or neon)"
#endif

/* Nonzero, so that a name that is no level (0 in #if) equals none. */
#define LEVEL_ID_portable 1
#define LEVEL_ID_avx2 2
#define LEVEL_ID_avx512 3
#define LEVEL_ID_neon 4

#define LEVEL_CAT_(a, b) a##b
#define LEVEL_CAT(a, b) LEVEL_CAT_(a, b)
#define LEVEL_STR_(x) #x
#define LEVEL_STR(x) LEVEL_STR_(x)

#define LEVEL_IS(level) (LEVEL_CAT(LEVEL_ID_, level) == LEVEL_CAT(LEVEL_ID_, LM_LEVEL))
#define LEVEL_NAME(name) LEVEL_CAT(name##_, LM_LEVEL)
#define LEVEL_STRING LEVEL_STR(LM_LEVEL)

#if !(LEVEL_IS(portable) || LEVEL_IS(avx2) || LEVEL_IS(avx512) || LEVEL_IS(neon))
#error "LM_LEVEL names no level (portable, avx2, avx512 or neon)"
#elif (LEVEL_IS(avx2) || LEVEL_IS(avx512)) && !defined(__x86_64__)
#error "the avx2 and avx512 levels are x86-64's"
#elif LEVEL_IS(neon) && !defined(__aarch64__)
#error "the neon level is ARM64's"
#endif

#endif
