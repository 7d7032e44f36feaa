/* Yuen's t of drawn permutation splits in C: where one arm is large, the loop of `permutation.drawn_splits`
 * and `trimmed.SplitYuen.statistic`, for `SplitYuen.drawn_statistics` (`yuen_statistics`); otherwise the
 * loop of `permutation._drawn_masks` or `drawn_splits` and `trimmed.yuen_statistic` of the two arms, for
 * `trimmed.drawn_arm_statistics` (`yuen_arm_statistics`).
 *
 * Why. A history step of a 10^4-run campaign against its predecessor compares 294 runs with 2,048 in each
 * cell; where the t approximation's p lands between the family's strictest threshold and 0.1, the step
 * counts up to 6,800 drawn splits. In Python each split cost about 135 us (the draw's 294 uniform indices,
 * their set and sort, then the small arm's sums): 0.56 s of a step's 0.83 s of CPU, ten steps a night.
 * Between two campaigns of 10^4 runs (295 runs against 295 in a cell) a split cost 54 us in Python: 1.2 s
 * of a step's 1.25 s, the whole of a night's ingest into a full store but its copy.
 *
 * Same splits, same t. The draws are Python's own: the generator is `random.Random`'s Mersenne Twister,
 * taken from and handed back as `getstate()`'s words, each index `int(random() * n)` as Python computes it,
 * repeats rejected, the smaller arm's indices sorted. The arithmetic is `SplitYuen`'s, operation for
 * operation and in its order, with `sum()` as this interpreter sums floats (plain before 3.12, Neumaier's
 * compensated sum from 3.12 on) and `x ** 2` as libm's `pow(|x|, 2)`. So a split's t is the Python path's to the
 * last bit (tests/unit/test_stats_split_kernel.py compares them), and so is every p-value. Built with
 * -ffp-contract=off: a fused multiply-add would round once where Python rounds twice. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MT_N 624
#define MT_M 397
#define MATRIX_A 0x9908b0dfU
#define UPPER_MASK 0x80000000U
#define LOWER_MASK 0x7fffffffU

typedef struct {
    uint32_t mt[MT_N];
    Py_ssize_t index;
} mt_state;

/* CPython's genrand_uint32 (Modules/_randommodule.c). */
static uint32_t mt_next(mt_state *s)
{
    static const uint32_t mag01[2] = {0x0U, MATRIX_A};
    uint32_t *mt = s->mt;
    uint32_t y;
    if (s->index >= MT_N) {
        int kk;
        for (kk = 0; kk < MT_N - MT_M; kk++) {
            y = (mt[kk] & UPPER_MASK) | (mt[kk + 1] & LOWER_MASK);
            mt[kk] = mt[kk + MT_M] ^ (y >> 1) ^ mag01[y & 0x1U];
        }
        for (; kk < MT_N - 1; kk++) {
            y = (mt[kk] & UPPER_MASK) | (mt[kk + 1] & LOWER_MASK);
            mt[kk] = mt[kk + (MT_M - MT_N)] ^ (y >> 1) ^ mag01[y & 0x1U];
        }
        y = (mt[MT_N - 1] & UPPER_MASK) | (mt[0] & LOWER_MASK);
        mt[MT_N - 1] = mt[MT_M - 1] ^ (y >> 1) ^ mag01[y & 0x1U];
        s->index = 0;
    }
    y = mt[s->index++];
    y ^= (y >> 11);
    y ^= (y << 7) & 0x9d2c5680U;
    y ^= (y << 15) & 0xefc60000U;
    y ^= (y >> 18);
    return y;
}

/* random.random(): 53 bits from two words. */
static double mt_random(mt_state *s)
{
    uint32_t a = mt_next(s) >> 5;
    uint32_t b = mt_next(s) >> 6;
    return (a * 67108864.0 + b) * (1.0 / 9007199254740992.0);
}

/* sum() of floats as this interpreter computes it. */
typedef struct {
    double f, c;
} py_sum;

static inline void sum_add(py_sum *s, double x)
{
#if PY_VERSION_HEX >= 0x030C0000
    double t = s->f + x;
    if (fabs(s->f) >= fabs(x))
        s->c += (s->f - t) + x;
    else
        s->c += (x - t) + s->f;
    s->f = t;
#else
    s->f += x;
#endif
}

static inline double sum_value(const py_sum *s)
{
#if PY_VERSION_HEX >= 0x030C0000
    if (s->c != 0.0 && isfinite(s->c))
        return s->f + s->c;
#endif
    return s->f;
}

/* Python's x ** 2 for a float: float_pow takes |x| (an even power) and calls libm's pow, which is not
 * always x * x rounded (it differs in the last bit for about one x in 1,250). A compiler turns pow(x, 2.0)
 * into x * x, so the call goes through a pointer it cannot see through. */
static double (*volatile libm_pow)(double, double) = pow;

static inline double square_pow(double x) { return libm_pow(fabs(x), 2.0); }

typedef struct {
    double mean, var;
    Py_ssize_t kept;
} arm_parts;

/* The pooled values less their median, their squares, and their sums outward from the median. */
typedef struct {
    const double *values, *squares, *sums, *square_sums;
    Py_ssize_t n;
    double trim;
} pooled;

/* trimmed.sorted_parts of xs[0..n), ascending, g trimmed at each end. */
static arm_parts sorted_parts(const double *xs, Py_ssize_t n, Py_ssize_t g)
{
    Py_ssize_t h = n - 2 * g;
    py_sum kept = {0.0, 0.0}, squares = {0.0, 0.0};
    for (Py_ssize_t i = g; i < n - g; i++)
        sum_add(&kept, xs[i]);
    double kept_sum = sum_value(&kept);
    double low = xs[g], high = xs[n - g - 1];
    double mean_w = (kept_sum + (double)g * (low + high)) / (double)n;
    for (Py_ssize_t i = g; i < n - g; i++) {
        double d = xs[i] - mean_w;
        sum_add(&squares, d * d);
    }
    double total = sum_value(&squares) + (double)g * (square_pow(low - mean_w) + square_pow(high - mean_w));
    arm_parts p = {kept_sum / (double)h, n > 1 ? total / (double)(n - 1) : 0.0, h};
    return p;
}

/* SplitYuen._explicit: the arm's values gathered (ascending, as the indices are) into xs. */
static arm_parts explicit_parts(const pooled *p, const Py_ssize_t *arm, Py_ssize_t k, double *xs)
{
    for (Py_ssize_t i = 0; i < k; i++)
        xs[i] = p->values[arm[i]];
    return sorted_parts(xs, k, (Py_ssize_t)floor(p->trim * (double)k));
}

/* trimmed._rank_position over the skipped indices themselves. */
static Py_ssize_t rank_position(const Py_ssize_t *skipped, Py_ssize_t k, Py_ssize_t rank)
{
    Py_ssize_t at = rank;
    for (Py_ssize_t i = 0; i < k; i++) {
        if (skipped[i] > at)
            break;
        at++;
    }
    return at;
}

/* bisect.bisect_right / bisect_left over ascending indices. */
static Py_ssize_t bisect(const Py_ssize_t *a, Py_ssize_t k, Py_ssize_t x, int right)
{
    Py_ssize_t lo = 0, hi = k;
    while (lo < hi) {
        Py_ssize_t mid = (lo + hi) / 2;
        if (right ? x < a[mid] : x <= a[mid])
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

/* SplitYuen._complement: the arm of every pooled value but those at small[0..k). */
static arm_parts complement_parts(const pooled *p, const Py_ssize_t *small, Py_ssize_t k)
{
    Py_ssize_t n_arm = p->n - k;
    Py_ssize_t g = (Py_ssize_t)floor(p->trim * (double)n_arm);
    Py_ssize_t lo = rank_position(small, k, g), hi = rank_position(small, k, n_arm - g - 1);
    Py_ssize_t first = bisect(small, k, lo, 1), last = bisect(small, k, hi, 0);
    py_sum inner = {0.0, 0.0}, inner_sq = {0.0, 0.0};
    for (Py_ssize_t i = first; i < last; i++)
        sum_add(&inner, p->values[small[i]]);
    for (Py_ssize_t i = first; i < last; i++)
        sum_add(&inner_sq, p->squares[small[i]]);
    double kept = p->sums[hi + 1] - p->sums[lo] - sum_value(&inner);
    double kept_sq = p->square_sums[hi + 1] - p->square_sums[lo] - sum_value(&inner_sq);
    double wins = kept + (double)g * (p->values[lo] + p->values[hi]);
    double wins_sq = kept_sq + (double)g * (p->squares[lo] + p->squares[hi]);
    double var_w = 0.0;
    if (n_arm > 1) {
        double v = (wins_sq - wins * wins / (double)n_arm) / (double)(n_arm - 1);
        var_w = v > 0.0 ? v : 0.0; /* max(0.0, v): 0.0 unless v is greater */
    }
    arm_parts a = {kept / (double)(n_arm - 2 * g), var_w, n_arm - 2 * g};
    return a;
}

/* trimmed._yuen_t. */
static double yuen_t(Py_ssize_t nb, arm_parts b, Py_ssize_t nc, arm_parts c)
{
    double se2 = (double)(nb - 1) * b.var / (double)(b.kept * (b.kept - 1)) +
                 (double)(nc - 1) * c.var / (double)(c.kept * (c.kept - 1));
    if (se2 > 0.0)
        return (c.mean - b.mean) / sqrt(se2);
    if (c.mean != b.mean)
        return copysign(INFINITY, c.mean - b.mean);
    return 0.0;
}

static int cmp_index(const void *a, const void *b)
{
    Py_ssize_t x = *(const Py_ssize_t *)a, y = *(const Py_ssize_t *)b;
    return (x > y) - (x < y);
}

/* The runs of the smaller arm of a split of n into n_condition and the rest. */
static inline Py_ssize_t smaller_arm(Py_ssize_t n, Py_ssize_t n_condition)
{
    return n_condition < n - n_condition ? n_condition : n - n_condition;
}

/* One split drawn as `drawn_splits` draws it: `small` distinct indices, ascending, into picked. */
static void draw_small(mt_state *s, Py_ssize_t n, Py_ssize_t small, unsigned char *seen, Py_ssize_t *picked)
{
    Py_ssize_t got = 0;
    while (got < small) {
        Py_ssize_t i = (Py_ssize_t)(mt_random(s) * (double)n);
        if (!seen[i]) {
            seen[i] = 1;
            picked[got++] = i;
        }
    }
    if (n <= 64 * small) { /* read back in order from the marks: a pass over n beats sorting the arm */
        got = 0;
        for (Py_ssize_t i = 0; i < n; i++) { /* without a branch, which a random mark mispredicts */
            picked[got] = i;
            got += seen[i];
            seen[i] = 0;
        }
    } else {
        qsort(picked, (size_t)small, sizeof *picked, cmp_index);
        for (Py_ssize_t i = 0; i < small; i++)
            seen[picked[i]] = 0;
    }
}

static int read_buffer(PyObject *obj, Py_buffer *view, Py_ssize_t n, const char *what)
{
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return -1;
    if (view->itemsize != sizeof(double) || !view->format || strcmp(view->format, "d") != 0 ||
        view->len / (Py_ssize_t)sizeof(double) < n) {
        PyErr_Format(PyExc_ValueError, "%s: an array('d') of at least %zd values is wanted", what, n);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

static int read_state(PyObject *state, mt_state *s)
{
    if (!PyTuple_Check(state) || PyTuple_GET_SIZE(state) != MT_N + 1) {
        PyErr_SetString(PyExc_ValueError, "state: random.Random.getstate()[1] (625 ints) is wanted");
        return -1;
    }
    for (Py_ssize_t i = 0; i < MT_N; i++) {
        unsigned long w = PyLong_AsUnsignedLong(PyTuple_GET_ITEM(state, i));
        if (w == (unsigned long)-1 && PyErr_Occurred())
            return -1;
        s->mt[i] = (uint32_t)w;
    }
    s->index = PyLong_AsSsize_t(PyTuple_GET_ITEM(state, MT_N));
    if (s->index == -1 && PyErr_Occurred())
        return -1;
    if (s->index < 0 || s->index > MT_N) {
        PyErr_SetString(PyExc_ValueError, "state: its index is out of range");
        return -1;
    }
    return 0;
}

static PyObject *write_state(const mt_state *s)
{
    PyObject *out = PyTuple_New(MT_N + 1);
    if (!out)
        return NULL;
    for (Py_ssize_t i = 0; i <= MT_N; i++) {
        PyObject *w = i < MT_N ? PyLong_FromUnsignedLong(s->mt[i]) : PyLong_FromSsize_t(s->index);
        if (!w) {
            Py_DECREF(out);
            return NULL;
        }
        PyTuple_SET_ITEM(out, i, w);
    }
    return out;
}

/* A loop's scratch arrays in one zeroed block (one free): doubles, then indices, then bytes, each part
 * aligned for the next as doubles and Py_ssize_t both are 8 bytes. */
typedef struct {
    double *doubles;
    Py_ssize_t *indices;
    unsigned char *bytes;
    void *block;
} scratch;

static int scratch_alloc(scratch *w, Py_ssize_t doubles, Py_ssize_t indices, Py_ssize_t bytes)
{
    w->block = calloc(1, (size_t)doubles * sizeof(double) + (size_t)indices * sizeof(Py_ssize_t) + (size_t)bytes);
    if (!w->block)
        return -1;
    w->doubles = w->block;
    w->indices = (Py_ssize_t *)(w->doubles + doubles);
    w->bytes = (unsigned char *)(w->indices + indices);
    return 0;
}

/* `count` doubles to write into, as bytes, and the scratch; NULL (an exception set) without memory. */
static PyObject *output_with(Py_ssize_t count, scratch *w, Py_ssize_t doubles, Py_ssize_t indices, Py_ssize_t bytes)
{
    PyObject *out = PyBytes_FromStringAndSize(NULL, count * (Py_ssize_t)sizeof(double));
    if (out && scratch_alloc(w, doubles, indices, bytes) < 0) {
        Py_DECREF(out);
        return PyErr_NoMemory();
    }
    return out;
}

/* The statistics of `count` splits into bytes of doubles, the generator advanced in s. */
static PyObject *statistics_of(const pooled *p, Py_ssize_t n_condition, Py_ssize_t count, mt_state *s)
{
    Py_ssize_t n = p->n, small = smaller_arm(n, n_condition);
    int condition_small = small == n_condition;
    scratch w = {NULL, NULL, NULL, NULL}; /* set by output_with; zeroed: -O3 cannot see that it is */
    PyObject *out = output_with(count, &w, small, small + 1, n); /* + 1: the read-back's last store */
    if (!out)
        return NULL;
    double *xs = w.doubles, *t = (double *)PyBytes_AS_STRING(out);
    Py_ssize_t *picked = w.indices;
    unsigned char *seen = w.bytes;
    Py_BEGIN_ALLOW_THREADS;
    for (Py_ssize_t j = 0; j < count; j++) {
        draw_small(s, n, small, seen, picked);
        arm_parts given = explicit_parts(p, picked, small, xs), rest = complement_parts(p, picked, small);
        /* the drawn indices are the condition arm where it is the smaller one, else the baseline's */
        t[j] = condition_small ? yuen_t(n - small, rest, small, given) : yuen_t(small, given, n - small, rest);
    }
    Py_END_ALLOW_THREADS;
    free(w.block);
    return out;
}

/* The condition arm of one split as `permutation._drawn_masks` draws it where the arms are near even:
 * getrandbits(n) as CPython fills it (32-bit words from the least significant, the last word's surplus
 * low bits dropped), bit i putting index i in the arm, then members taken out or others put in at
 * int(random() * n) until the arm holds n_condition. */
static void draw_coins(mt_state *s, Py_ssize_t n, Py_ssize_t n_condition, unsigned char *mask)
{
    Py_ssize_t members = 0;
    for (Py_ssize_t w = 0; 32 * w < n; w++) {
        Py_ssize_t left = n - 32 * w, bits = left < 32 ? left : 32;
        uint32_t r = mt_next(s);
        if (left < 32)
            r >>= 32 - left;
        for (Py_ssize_t b = 0; b < bits; b++) {
            mask[32 * w + b] = (unsigned char)(r >> b & 1U);
            members += (Py_ssize_t)(r >> b & 1U);
        }
    }
    while (members != n_condition) {
        Py_ssize_t i = (Py_ssize_t)(mt_random(s) * (double)n);
        if (mask[i] == (members > n_condition)) { /* a member to take out, or an index to put in */
            mask[i] ^= 1;
            members += mask[i] ? 1 : -1;
        }
    }
}

/* The condition arm of one split as `permutation.drawn_splits` draws it: the smaller side's indices, the
 * arm their complement where the condition is the larger side. */
static void draw_indices(mt_state *s, Py_ssize_t n, Py_ssize_t n_condition, unsigned char *mask, unsigned char *seen,
                         Py_ssize_t *picked)
{
    Py_ssize_t small = smaller_arm(n, n_condition);
    unsigned char in_small = small == n_condition;
    draw_small(s, n, small, seen, picked); /* leaves its marks cleared */
    memset(mask, !in_small, (size_t)n);
    for (Py_ssize_t i = 0; i < small; i++)
        mask[picked[i]] = in_small;
}

/* trimmed.yuen_statistic of the split whose condition arm is `mask`: the arms gathered in the pooled
 * (ascending) order, as `permutation.mask_arms` and `two_arms` give them. base and cond hold n + 1. */
static double arm_t(const double *xs, Py_ssize_t n, double trim, const unsigned char *mask, double *base, double *cond)
{
    Py_ssize_t nb = 0, nc = 0;
    for (Py_ssize_t i = 0; i < n; i++) { /* both written, one kept: no branch on a random mark */
        base[nb] = cond[nc] = xs[i];
        nc += mask[i];
        nb += 1 - mask[i];
    }
    arm_parts b = sorted_parts(base, nb, (Py_ssize_t)floor(trim * (double)nb));
    arm_parts c = sorted_parts(cond, nc, (Py_ssize_t)floor(trim * (double)nc));
    return yuen_t(nb, b, nc, c);
}

/* The statistics of `count` splits of xs[0..n) into bytes of doubles, the generator advanced in s. */
static PyObject *arm_statistics_of(const double *xs, Py_ssize_t n, double trim, Py_ssize_t n_condition, int by_coins,
                                   Py_ssize_t count, mt_state *s)
{
    scratch w = {NULL, NULL, NULL, NULL}; /* set by output_with; zeroed: -O3 cannot see that it is */
    PyObject *out = output_with(count, &w, 2 * (n + 1), n + 1, 2 * n);
    if (!out)
        return NULL;
    double *base = w.doubles, *cond = w.doubles + n + 1, *t = (double *)PyBytes_AS_STRING(out);
    Py_ssize_t *picked = w.indices;
    unsigned char *mask = w.bytes, *seen = w.bytes + n;
    Py_BEGIN_ALLOW_THREADS;
    for (Py_ssize_t j = 0; j < count; j++) {
        if (by_coins)
            draw_coins(s, n, n_condition, mask);
        else
            draw_indices(s, n, n_condition, mask, seen, picked);
        t[j] = arm_t(xs, n, trim, mask, base, cond);
    }
    Py_END_ALLOW_THREADS;
    free(w.block);
    return out;
}

/* Whether the arguments cannot be drawn (an exception then set): arms under 2 runs, a trim outside [0,
 * 0.5), a negative count. */
static int bad_arms(Py_ssize_t n, Py_ssize_t n_condition, double trim, Py_ssize_t count)
{
    Py_ssize_t small = smaller_arm(n, n_condition);
    if (n < 4 || small < 2 || count < 0 || !(trim >= 0.0 && trim < 0.5)) {
        PyErr_SetString(PyExc_ValueError, "two arms of at least 2 runs, a trim in [0, 0.5), count >= 0");
        return 1;
    }
    return 0;
}

/* (stats, the generator's state after the draws), taking stats' reference; NULL if stats is. */
static PyObject *with_state(PyObject *stats, const mt_state *s)
{
    if (!stats)
        return NULL;
    PyObject *next = write_state(s);
    if (!next) {
        Py_DECREF(stats);
        return NULL;
    }
    return Py_BuildValue("(NN)", stats, next);
}

static PyObject *yuen_arm_statistics(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *values, *state;
    Py_ssize_t n, n_condition, count;
    double trim;
    int by_coins;
    if (!PyArg_ParseTuple(args, "OndnpOn:yuen_arm_statistics", &values, &n, &trim, &n_condition, &by_coins, &state,
                          &count))
        return NULL;
    if (bad_arms(n, n_condition, trim, count))
        return NULL;
    Py_buffer view;
    mt_state s;
    PyObject *result = NULL;
    if (read_buffer(values, &view, n, "values") < 0)
        return NULL;
    if (read_state(state, &s) == 0)
        result = with_state(arm_statistics_of(view.buf, n, trim, n_condition, by_coins, count, &s), &s);
    PyBuffer_Release(&view);
    return result;
}

static PyObject *yuen_statistics(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *objs[4], *state;
    Py_ssize_t n, n_condition, count;
    double trim;
    if (!PyArg_ParseTuple(args, "OOOOndnOn:yuen_statistics", &objs[0], &objs[1], &objs[2], &objs[3], &n, &trim,
                          &n_condition, &state, &count))
        return NULL;
    if (bad_arms(n, n_condition, trim, count))
        return NULL;
    static const char *names[4] = {"values", "squares", "sums", "square_sums"};
    Py_ssize_t lengths[4] = {n, n, n + 1, n + 1};
    Py_buffer views[4];
    int got = 0;
    mt_state s;
    PyObject *result = NULL;
    for (; got < 4; got++)
        if (read_buffer(objs[got], &views[got], lengths[got], names[got]) < 0)
            goto done;
    if (read_state(state, &s) < 0)
        goto done;
    pooled p = {views[0].buf, views[1].buf, views[2].buf, views[3].buf, n, trim};
    result = with_state(statistics_of(&p, n_condition, count, &s), &s);
done:
    while (got > 0)
        PyBuffer_Release(&views[--got]);
    return result;
}

static PyMethodDef methods[] = {
    {"yuen_statistics", yuen_statistics, METH_VARARGS,
     "yuen_statistics(values, squares, sums, square_sums, n, trim, n_condition, state, count) -> (bytes, state)\n"
     "Yuen's t of `count` splits drawn as permutation.drawn_splits draws them from the Mersenne Twister state\n"
     "(random.Random.getstate()[1]), as SplitYuen.statistic computes it; the doubles as bytes, and the state\n"
     "after the draws."},
    {"yuen_arm_statistics", yuen_arm_statistics, METH_VARARGS,
     "yuen_arm_statistics(values, n, trim, n_condition, by_coins, state, count) -> (bytes, state)\n"
     "Yuen's t of `count` splits of the pooled values (ascending) drawn as permutation._drawn_masks\n"
     "(by_coins) or permutation.drawn_splits draws them from the Mersenne Twister state, as\n"
     "trimmed.yuen_statistic computes it of the two arms; the doubles as bytes, and the state after."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    "_splits",
    "Drawn permutation splits of Yuen's t in C (trimmed.SplitYuen).",
    -1,
    methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC PyInit__splits(void) { return PyModule_Create(&module); }
