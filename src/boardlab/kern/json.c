#include "json.h"

#include <inttypes.h>
#include <math.h>

void bk_json_init(bk_json *j, FILE *out)
{
    j->out = out;
    j->depth = 0;
    j->need_comma[0] = false;
    j->after_key = false;
}

/* Called before every value or key: a comma between siblings, nothing right after a key. */
static void sep(bk_json *j)
{
    if (j->after_key) {
        j->after_key = false;
        return;
    }
    if (j->need_comma[j->depth])
        fputc(',', j->out);
    j->need_comma[j->depth] = true;
}

static void open(bk_json *j, char c)
{
    sep(j);
    fputc(c, j->out);
    if (j->depth + 1 < BK_JSON_MAX_DEPTH)
        j->depth++;
    j->need_comma[j->depth] = false;
}

static void close_(bk_json *j, char c)
{
    fputc(c, j->out);
    if (j->depth > 0)
        j->depth--;
}

void bk_json_begin_object(bk_json *j) { open(j, '{'); }
void bk_json_end_object(bk_json *j) { close_(j, '}'); }
void bk_json_begin_array(bk_json *j) { open(j, '['); }
void bk_json_end_array(bk_json *j) { close_(j, ']'); }

static void write_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        switch (*p) {
        case '"': fputs("\\\"", out); break;
        case '\\': fputs("\\\\", out); break;
        case '\n': fputs("\\n", out); break;
        case '\r': fputs("\\r", out); break;
        case '\t': fputs("\\t", out); break;
        default:
            if (*p < 0x20)
                fprintf(out, "\\u%04x", *p);
            else
                fputc(*p, out);
        }
    }
    fputc('"', out);
}

void bk_json_key(bk_json *j, const char *key)
{
    sep(j);
    write_string(j->out, key);
    fputc(':', j->out);
    j->after_key = true;
}

void bk_json_str(bk_json *j, const char *s)
{
    sep(j);
    if (!s)
        fputs("null", j->out);
    else
        write_string(j->out, s);
}

void bk_json_num(bk_json *j, double v)
{
    sep(j);
    if (isfinite(v))
        fprintf(j->out, "%.10g", v);
    else
        fputs("null", j->out);
}

void bk_json_int(bk_json *j, int64_t v)
{
    sep(j);
    fprintf(j->out, "%" PRId64, v);
}

void bk_json_uint(bk_json *j, uint64_t v)
{
    sep(j);
    fprintf(j->out, "%" PRIu64, v);
}

void bk_json_bool(bk_json *j, bool v)
{
    sep(j);
    fputs(v ? "true" : "false", j->out);
}

void bk_json_null(bk_json *j)
{
    sep(j);
    fputs("null", j->out);
}

/* The five key-and-value writers: the key, then the value's own writer. */
#define BK_JSON_KV(kind, type)                                                                                         \
    void bk_json_kv_##kind(bk_json *j, const char *key, type v)                                                        \
    {                                                                                                                  \
        bk_json_key(j, key);                                                                                           \
        bk_json_##kind(j, v);                                                                                          \
    }
BK_JSON_KV(str, const char *)
BK_JSON_KV(num, double)
BK_JSON_KV(int, int64_t)
BK_JSON_KV(uint, uint64_t)
BK_JSON_KV(bool, bool)

void bk_json_key_object(bk_json *j, const char *key)
{
    bk_json_key(j, key);
    bk_json_begin_object(j);
}

void bk_json_key_array(bk_json *j, const char *key)
{
    bk_json_key(j, key);
    bk_json_begin_array(j);
}
