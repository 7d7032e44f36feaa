/* A minimal streaming JSON writer: commas and escaping are handled here, nowhere else. */
#ifndef BK_JSON_H
#define BK_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define BK_JSON_MAX_DEPTH 32

typedef struct {
    FILE *out;
    int depth;
    bool need_comma[BK_JSON_MAX_DEPTH];
    bool after_key;
} bk_json;

__attribute__((visibility("hidden"))) void bk_json_init(bk_json *j, FILE *out);
__attribute__((visibility("hidden"))) void bk_json_begin_object(bk_json *j);
__attribute__((visibility("hidden"))) void bk_json_end_object(bk_json *j);
__attribute__((visibility("hidden"))) void bk_json_begin_array(bk_json *j);
__attribute__((visibility("hidden"))) void bk_json_end_array(bk_json *j);
__attribute__((visibility("hidden"))) void bk_json_key(bk_json *j, const char *key);
__attribute__((visibility("hidden"))) void bk_json_str(bk_json *j, const char *s);
__attribute__((visibility("hidden"))) void bk_json_num(bk_json *j, double v); /* non-finite -> null */
__attribute__((visibility("hidden"))) void bk_json_int(bk_json *j, int64_t v);
__attribute__((visibility("hidden"))) void bk_json_uint(bk_json *j, uint64_t v);
__attribute__((visibility("hidden"))) void bk_json_bool(bk_json *j, bool v);
__attribute__((visibility("hidden"))) void bk_json_null(bk_json *j);
/* A key and its value in one call, the way nearly every member is written. */
__attribute__((visibility("hidden"))) void bk_json_kv_str(bk_json *j, const char *key, const char *s);
__attribute__((visibility("hidden"))) void bk_json_kv_num(bk_json *j, const char *key, double v);
__attribute__((visibility("hidden"))) void bk_json_kv_int(bk_json *j, const char *key, int64_t v);
__attribute__((visibility("hidden"))) void bk_json_kv_uint(bk_json *j, const char *key, uint64_t v);
__attribute__((visibility("hidden"))) void bk_json_kv_bool(bk_json *j, const char *key, bool v);
/* A key whose value is an object or array, opened here and closed by the caller. */
__attribute__((visibility("hidden"))) void bk_json_key_object(bk_json *j, const char *key);
__attribute__((visibility("hidden"))) void bk_json_key_array(bk_json *j, const char *key);

#endif
