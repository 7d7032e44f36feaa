/* The kernels' parameters (parsed from "name=value" with the kernel's declared types and ranges) and their
 * specs as `boardlab-kern --list --json` prints them. */
#include "core_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- parameters ---- */

const bk_kernel *bk_find_kernel(const char *name)
{
    for (int i = 0; bk_kernels[i]; i++)
        if (strcmp(bk_kernels[i]->name, name) == 0)
            return bk_kernels[i];
    return NULL;
}

int bk_count_params(const bk_kernel *k)
{
    int n = 0;
    while (k->params && k->params[n].name)
        n++;
    return n;
}

int bk_count_metrics(const bk_kernel *k)
{
    int n = 0;
    while (k->metrics && k->metrics[n].name)
        n++;
    return n;
}

int bk_count_phases(const bk_kernel *k)
{
    int n = 0;
    while (k->phases && k->phases[n])
        n++;
    return n;
}

static const char *type_name(bk_type t)
{
    switch (t) {
    case BK_INT: return "int";
    case BK_FLOAT: return "float";
    case BK_STR: return "str";
    case BK_ENUM: return "enum";
    }
    return "?";
}

/* "64k" -> 65536; suffixes are powers of 1024 because sizes are what they express. */
static bool parse_int(const char *s, int64_t *out)
{
    errno = 0;
    char *end;
    long long v = strtoll(s, &end, 0);
    if (end == s || errno)
        return false;
    int64_t mult = 1;
    if (*end == 'k' || *end == 'K')
        mult = 1024, end++;
    else if (*end == 'M')
        mult = 1024 * 1024, end++;
    else if (*end == 'G')
        mult = 1024LL * 1024 * 1024, end++;
    if (*end)
        return false;
    *out = (int64_t)v * mult;
    return true;
}

static bool enum_has(const char *choices, const char *value)
{
    size_t n = strlen(value);
    for (const char *p = choices; p && *p;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len == n && strncmp(p, value, n) == 0)
            return true;
        p = comma ? comma + 1 : NULL;
    }
    return false;
}

/* Validates one value against its spec; prints the reason and returns false when it does not fit. */
static bool set_param(bk_ctx *ctx, int i, const char *text)
{
    const bk_param *p = &ctx->k->params[i];
    ctx->text[i] = text;
    switch (p->type) {
    case BK_INT: {
        int64_t v;
        if (!parse_int(text, &v)) {
            fprintf(stderr, "boardlab-kern: %s: parameter '%s' expects an integer (k/M/G suffixes allowed), got '%s'\n",
                    ctx->k->name, p->name, text);
            return false;
        }
        if ((double)v < p->min || (double)v > p->max) {
            fprintf(stderr, "boardlab-kern: %s: parameter '%s'=%" PRId64 " is out of range [%.0f, %.0f]\n",
                    ctx->k->name, p->name, v, p->min, p->max);
            return false;
        }
        ctx->ival[i] = v;
        ctx->fval[i] = (double)v;
        return true;
    }
    case BK_FLOAT: {
        char *end;
        errno = 0;
        double v = strtod(text, &end);
        if (end == text || *end || errno || !isfinite(v)) {
            fprintf(stderr, "boardlab-kern: %s: parameter '%s' expects a number, got '%s'\n", ctx->k->name, p->name,
                    text);
            return false;
        }
        if (v < p->min || v > p->max) {
            fprintf(stderr, "boardlab-kern: %s: parameter '%s'=%g is out of range [%g, %g]\n", ctx->k->name, p->name, v,
                    p->min, p->max);
            return false;
        }
        ctx->fval[i] = v;
        ctx->ival[i] = (int64_t)v;
        return true;
    }
    case BK_ENUM:
        if (!enum_has(p->choices, text)) {
            fprintf(stderr, "boardlab-kern: %s: parameter '%s' must be one of %s, got '%s'\n", ctx->k->name, p->name,
                    p->choices, text);
            return false;
        }
        return true;
    case BK_STR: return true;
    }
    return false;
}

bool bk_parse_assignments(bk_ctx *ctx, char **assignments, int nassign)
{
    for (int i = 0; i < ctx->nparams; i++)
        if (!set_param(ctx, i, ctx->k->params[i].def))
            return false; /* a bad default is a bug, but say so rather than run */
    for (int a = 0; a < nassign; a++) {
        char *eq = strchr(assignments[a], '=');
        if (!eq) {
            fprintf(stderr, "boardlab-kern: %s: --param expects NAME=VALUE, got '%s'\n", ctx->k->name, assignments[a]);
            return false;
        }
        *eq = '\0';
        int found = -1;
        for (int i = 0; i < ctx->nparams; i++)
            if (strcmp(ctx->k->params[i].name, assignments[a]) == 0)
                found = i;
        if (found < 0) {
            fprintf(stderr, "boardlab-kern: %s: unknown parameter '%s'; valid parameters:", ctx->k->name,
                    assignments[a]);
            for (int i = 0; i < ctx->nparams; i++)
                fprintf(stderr, " %s", ctx->k->params[i].name);
            fprintf(stderr, "%s\n", ctx->nparams ? "" : " (none)");
            return false;
        }
        if (!set_param(ctx, found, eq + 1))
            return false;
    }
    return true;
}

/* ---- the spec, as printed by --list --json ---- */

void bk_json_kernel_spec(bk_json *j, const bk_kernel *k)
{
    const char *reason = k->supported ? k->supported() : NULL;
    bk_json_begin_object(j);
    bk_json_kv_str(j, "name", k->name);
    bk_json_kv_str(j, "family", k->family);
    bk_json_kv_str(j, "summary", k->summary);
    bk_json_kv_bool(j, "supported", reason == NULL);
    bk_json_kv_str(j, "reason", reason);
    bk_json_key_array(j, "params");
    for (int i = 0; k->params && k->params[i].name; i++) {
        const bk_param *p = &k->params[i];
        bk_json_begin_object(j);
        bk_json_kv_str(j, "name", p->name);
        bk_json_kv_str(j, "type", type_name(p->type));
        bk_json_kv_str(j, "default", p->def);
        if (p->type == BK_INT || p->type == BK_FLOAT) {
            bk_json_kv_num(j, "min", p->min);
            bk_json_kv_num(j, "max", p->max);
        }
        if (p->type == BK_ENUM) {
            bk_json_key_array(j, "choices");
            char buf[512];
            snprintf(buf, sizeof buf, "%s", p->choices);
            for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
                bk_json_str(j, tok);
            bk_json_end_array(j);
        }
        bk_json_kv_str(j, "unit", p->unit);
        bk_json_kv_str(j, "help", p->help);
        bk_json_end_object(j);
    }
    bk_json_end_array(j);
    bk_json_key_array(j, "metrics");
    for (int i = 0; k->metrics && k->metrics[i].name; i++) {
        const bk_metric *m = &k->metrics[i];
        static const char *kinds[] = {"rate", "time", "value", "mean"};
        bk_json_begin_object(j);
        bk_json_kv_str(j, "name", m->name);
        bk_json_kv_str(j, "unit", m->unit);
        bk_json_kv_bool(j, "higher_is_better", m->higher_is_better);
        bk_json_kv_str(j, "kind", kinds[m->kind]);
        bk_json_kv_str(j, "phase", m->phase >= 0 ? k->phases[m->phase] : NULL);
        bk_json_kv_str(j, "help", m->help);
        bk_json_end_object(j);
    }
    bk_json_end_array(j);
    bk_json_key_array(j, "phases");
    for (int i = 0; k->phases && k->phases[i]; i++)
        bk_json_str(j, k->phases[i]);
    bk_json_end_array(j);
    bk_json_end_object(j);
}
