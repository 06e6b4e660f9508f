/* One float allocation laid out as consecutive pieces (a model's or a
 * mixer's activations, a head's scratch), by one function that both
 * measures it and carves it, so that the size allocated and the pieces
 * taken never disagree. In that function, with `float *base` (the
 * allocation, or NULL to only measure) and `size_t used = 0` in scope,
 *   TAKE(ptr, count);
 * points ptr at the next count floats (NULL when measuring) and takes
 * them; `used` ends as the floats the whole layout needs. */
#ifndef LM_ARENA_H
#define LM_ARENA_H

#define TAKE(ptr, count) ((ptr) = base ? base + used : NULL, used += (count))

#endif
