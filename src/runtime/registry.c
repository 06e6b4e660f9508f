/* Lookup by name in a registry (see runtime/registry.h). */
#include "runtime/registry.h"

#include <stdio.h>
#include <string.h>

/* A pointer to a struct converted to a pointer to its first member, the name. */
static const char *entry_name(const void *entry) { return *(const char *const *)entry; }

const void *registry_find(const void *const *entries, size_t n, const char *name) {
    for (size_t i = 0; i < n; i++)
        if (strcmp(entry_name(entries[i]), name) == 0) return entries[i];
    return NULL;
}

const char *registry_names(const void *const *entries, size_t n, char *buf, size_t cap) {
    size_t len = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n && len < cap; i++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%s", i ? ", " : "", entry_name(entries[i]));
    return buf;
}

size_t registry_index(const void *const *entries, size_t n, const void *entry) {
    for (size_t i = 0; i < n; i++)
        if (entries[i] == entry) return i;
    return n;
}

int list_next_item(const char **s, char *item, size_t cap, int sep) {
    const char *end = strchr(*s, sep);
    size_t len = end ? (size_t)(end - *s) : strlen(*s);
    if (len == 0 || len >= cap) return -1;
    memcpy(item, *s, len);
    item[len] = '\0';
    *s = end ? end + 1 : NULL;
    return 0;
}
