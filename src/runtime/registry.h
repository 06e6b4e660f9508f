/* Registries: the one place per interface that names its implementations
 * (mixers/mixer.c for mixers, tok/tokenizer.c for tokenizer kinds). A
 * registry is an array of pointers to the implementations, each a struct
 * whose FIRST member is its name (`const char *name`), so that one lookup
 * serves every interface. Adding an implementation: its own file, and one
 * entry in its registry. */
#ifndef LM_REGISTRY_H
#define LM_REGISTRY_H

#include <stddef.h>

/* The entry named `name`, or NULL. */
const void *registry_find(const void *const *entries, size_t n, const char *name);
/* The place of `entry` in the registry, or n when it is not there. */
size_t registry_index(const void *const *entries, size_t n, const void *entry);
/* The names in order, joined by ", " (for messages), written into buf. */
const char *registry_names(const void *const *entries, size_t n, char *buf, size_t cap);

/* Copies the next item of a list *s, up to sep, into item and advances *s
 * past it (to NULL after the last): the registry names of a per-layer list
 * ("attention,grassmann"), or a mixer's own lists. Returns -1 for an empty
 * or over-long item. */
int list_next_item(const char **s, char *item, size_t cap, int sep);

#endif
