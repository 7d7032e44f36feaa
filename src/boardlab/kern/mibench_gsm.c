/* mibench.gsm: the GSM 06.10 full-rate speech codec (RPE-LTP, 13 kbit/s), encode + decode, as MiBench's
 * telecom/gsm runs it with the TU Berlin "toast" coder.
 *
 * Written from the fixed-point description in GSM 06.10 / ETSI EN 300 961 (section 4: encoder 4.2.0-4.2.18,
 * decoder 4.3.1-4.3.7; section 5: the Word16/Word32 saturating operators and tables 5.1-5.3). Every
 * operation below is the spec's integer arithmetic, so the parameter stream and the decoded samples are
 * bit-exact and the same on every board. Frames are packed in the 33-octet layout of RFC 3551 section 4.5.8
 * (a 0xD signature nibble, then the 76 parameters MSB first), which is also what toast writes.
 *
 * One rep = encode `frames` 160-sample frames from reset codec state, then decode the packed stream.
 * Verification (see gsm_verify): a fresh encode and decode must reproduce the stream and the output bit for
 * bit; every parameter lies within its bit width and Nc within 40..120; the round trip reaches a segmental
 * SNR and a correlation that real GSM 06.10 reaches on this signal; a silent frame codes to the frame
 * worked out from the spec by hand; and a fixed known-answer input codes to the frames and samples that
 * libgsm 1.0.22 (the toast library) produces for it. The input is generated with integer arithmetic only,
 * so it too is the same on every board.
 */
#include "core.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define GSM_N 160 /* samples per frame (20 ms at 8 kHz) */
#define GSM_SUB 40 /* samples per sub-frame */
#define GSM_BYTES 33 /* packed frame: 4-bit signature + 260 bits of 76 parameters */

/* ---- section 5.1: the basic operators. Word16 results saturate; shifts are arithmetic. Where the spec
 * sums L_mult products (a*b*2) with the saturating L_add, the code below sums plain products and doubles
 * once, each time with the bound that shows no partial sum can reach 2^31: the same numbers, faster. ---- */

static inline int16_t sat16(int32_t x) { return x > INT16_MAX ? INT16_MAX : x < INT16_MIN ? INT16_MIN : (int16_t)x; }

static inline int32_t sat32(int64_t x) { return x > INT32_MAX ? INT32_MAX : x < INT32_MIN ? INT32_MIN : (int32_t)x; }

static inline int16_t add(int16_t a, int16_t b) { return sat16((int32_t)a + b); }
static inline int16_t sub(int16_t a, int16_t b) { return sat16((int32_t)a - b); }

/* mult: (a*b) >> 15, the one overflow case (-1 * -1) saturating. */
static inline int16_t mult(int16_t a, int16_t b)
{
    return a == INT16_MIN && b == INT16_MIN ? INT16_MAX : (int16_t)(((int32_t)a * b) >> 15);
}

/* mult_r: the same with rounding. */
static inline int16_t mult_r(int16_t a, int16_t b)
{
    return a == INT16_MIN && b == INT16_MIN ? INT16_MAX : (int16_t)(((int32_t)a * b + 16384) >> 15);
}

static inline int32_t l_add(int32_t a, int32_t b) { return sat32((int64_t)a + b); }

static inline int16_t abs16(int16_t a) { return a == INT16_MIN ? INT16_MAX : a < 0 ? (int16_t)-a : a; }

/* Left shifts of negative values are undefined in C: shift the bit pattern instead (the spec's "<<"). */
static inline int32_t shl32(int32_t x, int n) { return (int32_t)((uint32_t)x << n); }
static inline int16_t shl16(int16_t x, int n) { return (int16_t)(uint16_t)((uint32_t)(uint16_t)x << n); }

/* norm: left shifts that bring a nonzero positive value into [2^30, 2^31). */
static inline int norm32(int32_t x)
{
    uint32_t u = x < 0 ? ~(uint32_t)x : (uint32_t)x;
    return u == 0 ? (x == 0 ? 0 : 31) : __builtin_clz(u) - 1;
}

/* div: num/denum as a Q15 fraction, 0 <= num <= denum, by 15 steps of restoring division. */
static int16_t q15_div(int16_t num, int16_t denum)
{
    if (num == 0)
        return 0;
    int32_t n = num, d = denum, q = 0;
    for (int k = 0; k < 15; k++) {
        q <<= 1;
        n <<= 1;
        if (n >= d) {
            n -= d;
            q++;
        }
    }
    return (int16_t)q;
}

/* ---- section 5.2 tables ---- */

/* Table 5.1: LAR quantizer A[i], B[i] (B scaled by 512), MIC[i]..MAC[i] the coded range, and INVA = 1/A. */
static const int16_t LAR_A[8] = {20480, 20480, 20480, 20480, 13964, 15360, 8534, 9036};
static const int16_t LAR_B[8] = {0, 0, 2048, -2560, 94, -1792, -341, -1144};
static const int16_t LAR_MIC[8] = {-32, -32, -16, -16, -8, -8, -4, -4};
static const int16_t LAR_MAC[8] = {31, 31, 15, 15, 7, 7, 3, 3};
static const int16_t LAR_INVA[8] = {13107, 13107, 13107, 13107, 19223, 17476, 31454, 29708};
/* Table 5.2/5.3: LTP gain decision levels and quantized gains. */
static const int16_t DLB[4] = {6554, 16384, 26214, 32767};
static const int16_t QLB[4] = {3277, 11469, 21299, 32767};
/* Table 4.3a: the weighting filter's impulse response (a block filter of 11 taps). */
static const int16_t H[11] = {-134, -374, 0, 2054, 5741, 8192, 5741, 2054, 0, -374, -134};
/* Tables 4.5/4.6: inverse and direct APCM mantissas. */
static const int16_t NRFAC[8] = {29128, 26215, 23832, 21846, 20165, 18725, 17476, 16384};
static const int16_t FAC[8] = {18431, 20479, 22527, 24575, 26623, 28671, 30719, 32767};

/* The 76 parameters of one frame. */
typedef struct {
    int16_t LARc[8];
    int16_t Nc[4], bc[4], Mc[4], xmaxc[4];
    int16_t xMc[4][13];
} gsm_params;

/* Bits of each parameter, in transmission order (RFC 3551 table 3): LARc[0..7], then per sub-frame
 * Nc, bc, Mc, xmaxc, xMc[0..12]. */
static const uint8_t LAR_BITS[8] = {6, 6, 5, 5, 4, 4, 3, 3};

/* ---- shared by encoder (4.2.8-4.2.9) and decoder (4.3.3): LARc -> LARpp -> interpolated LARp -> rp ---- */

static void decode_lar(const int16_t *LARc, int16_t *LARpp)
{
    for (int i = 0; i < 8; i++) {
        int16_t t1 = (int16_t)(add(LARc[i], LAR_MIC[i]) * 1024); /* << 10, in range: |LARc+MIC| <= 32 */
        int16_t t2 = (int16_t)(LAR_B[i] * 2);
        t1 = sub(t1, t2);
        t1 = mult_r(LAR_INVA[i], t1);
        LARpp[i] = add(t1, t1);
    }
}

/* 4.2.9.1: the LARs move from the previous frame's to this frame's over the first 40 samples, in three
 * steps (3/4 old, 1/2, 1/4 old), which keeps the filters from switching abruptly. */
static void interpolate_lar(int seg, const int16_t *prev, const int16_t *cur, int16_t *LARp)
{
    for (int i = 0; i < 8; i++) {
        switch (seg) {
        case 0: LARp[i] = add(add(prev[i] >> 2, cur[i] >> 2), prev[i] >> 1); break;
        case 1: LARp[i] = add(prev[i] >> 1, cur[i] >> 1); break;
        case 2: LARp[i] = add(add(prev[i] >> 2, cur[i] >> 2), cur[i] >> 1); break;
        default: LARp[i] = cur[i];
        }
    }
}

/* 4.2.9.2: the piecewise-linear inverse of 4.2.6, giving reflection coefficients. */
static void lar_to_rp(int16_t *LARp)
{
    for (int i = 0; i < 8; i++) {
        int16_t t = abs16(LARp[i]);
        if (t < 11059)
            t = (int16_t)(t << 1);
        else if (t < 20070)
            t = add(t, 11059);
        else
            t = add(t >> 2, 26112);
        LARp[i] = LARp[i] < 0 ? (int16_t)-t : t;
    }
}

/* Segments of a frame over which one interpolated coefficient set holds: 0..12, 13..26, 27..39, 40..159. */
static const int SEG_START[5] = {0, 13, 27, 40, GSM_N};

/* ---- the encoder ---- */

typedef struct {
    int16_t z1; /* offset compensation: previous input */
    int32_t L_z2; /* offset compensation: recursive part, 31 bits */
    int16_t mp; /* pre-emphasis memory */
    int16_t u[8]; /* short-term analysis filter lattice */
    int16_t LARpp_prev[8];
    int16_t dp[120 + GSM_N]; /* reconstructed short-term residual: 120 past samples, then this frame */
} gsm_enc;

/* 4.2.1-4.2.3: downscale to 13 bits, remove the offset (a high-pass with pole 32735/32768), pre-emphasize
 * with beta = 28180/32768. */
static void preprocess(gsm_enc *st, const int16_t *in, int16_t *s)
{
    int16_t z1 = st->z1, mp = st->mp;
    int32_t L_z2 = st->L_z2;
    for (int k = 0; k < GSM_N; k++) {
        int16_t so = (int16_t)((in[k] >> 3) * 4);
        int16_t s1 = sub(so, z1);
        z1 = so;
        int32_t L_s2 = (int32_t)s1 * 32768;
        /* 31 x 16-bit product split in a high and low part, as the spec does it */
        int16_t msp = (int16_t)(L_z2 >> 15);
        int16_t lsp = (int16_t)(L_z2 - (int32_t)msp * 32768);
        L_s2 = l_add(L_s2, mult_r(lsp, 32735));
        L_z2 = l_add((int32_t)msp * 32735, L_s2);
        int16_t sof = (int16_t)(l_add(L_z2, 16384) >> 15);
        s[k] = add(sof, mult_r(mp, -28180));
        mp = sof;
    }
    st->z1 = z1;
    st->mp = mp;
    st->L_z2 = L_z2;
}

/* 4.2.4-4.2.7: autocorrelation of the scaled frame, Schur recursion to 8 reflection coefficients, their
 * log-area ratios, quantized and coded. Rescales s in place the way the spec does (losing the bits the
 * scaling dropped), because the short-term analysis filter works on that rescaled signal. */
static void lpc_analysis(int16_t *s, int16_t *LARc)
{
    int16_t smax = 0;
    for (int k = 0; k < GSM_N; k++) {
        int16_t t = abs16(s[k]);
        if (t > smax)
            smax = t;
    }
    int scalauto = smax == 0 ? 0 : 4 - norm32((int32_t)smax << 16);
    if (scalauto > 0) {
        int16_t t = (int16_t)(16384 >> (scalauto - 1));
        for (int k = 0; k < GSM_N; k++)
            s[k] = mult_r(s[k], t);
    }
    /* Sum of L_mult products. The scaling leaves |s| <= 2^11, so 160 doubled products stay below 2^31:
     * the saturating L_add can never saturate, and a plain sum doubled once is the same number. */
    int32_t L_ACF[9];
    for (int k = 0; k <= 8; k++) {
        int32_t acc = 0;
        for (int i = k; i < GSM_N; i++)
            acc += (int32_t)s[i] * s[i - k];
        L_ACF[k] = acc * 2;
    }
    if (scalauto > 0)
        for (int k = 0; k < GSM_N; k++)
            s[k] = shl16(s[k], scalauto);

    /* 4.2.5: Schur recursion. P holds the prediction errors, K the backward terms. */
    int16_t r[8] = {0};
    if (L_ACF[0] != 0) {
        int n0 = norm32(L_ACF[0]);
        int16_t ACF[9], P[9], K[9];
        for (int k = 0; k <= 8; k++)
            ACF[k] = (int16_t)(shl32(L_ACF[k], n0) >> 16);
        for (int i = 1; i <= 7; i++)
            K[i] = ACF[i];
        for (int i = 0; i <= 8; i++)
            P[i] = ACF[i];
        for (int n = 1; n <= 8; n++) {
            int16_t t = abs16(P[1]);
            if (P[0] < t)
                break; /* the remaining coefficients stay 0 */
            int16_t rn = q15_div(t, P[0]);
            if (P[1] > 0)
                rn = (int16_t)-rn;
            r[n - 1] = rn;
            if (n == 8)
                break;
            P[0] = add(P[0], mult_r(P[1], rn));
            for (int m = 1; m <= 8 - n; m++) {
                P[m] = add(P[m + 1], mult_r(K[m], rn));
                K[m] = add(K[m], mult_r(P[m + 1], rn));
            }
        }
    }

    for (int i = 0; i < 8; i++) {
        /* 4.2.6: LAR, a piecewise-linear approximation of log((1+r)/(1-r)) */
        int16_t t = abs16(r[i]);
        if (t < 22118)
            t = (int16_t)(t >> 1);
        else if (t < 31130)
            t = (int16_t)(t - 11059);
        else
            t = (int16_t)((t - 26112) << 2);
        int16_t lar = r[i] < 0 ? (int16_t)-t : t;
        /* 4.2.7: quantize with A, B; clamp to MIC..MAC; store as an unsigned code */
        t = mult(LAR_A[i], lar);
        t = add(t, LAR_B[i]);
        t = add(t, 256);
        t = (int16_t)(t >> 9);
        LARc[i] = (int16_t)(t > LAR_MAC[i] ? LAR_MAC[i] - LAR_MIC[i] : t < LAR_MIC[i] ? 0 : t - LAR_MIC[i]);
    }
}

/* 4.2.10: the lattice analysis filter over samples [k0, k1) with one coefficient set. */
static void st_analysis(int16_t *u, const int16_t *rp, int16_t *s, int k0, int k1)
{
    for (int k = k0; k < k1; k++) {
        int16_t di = s[k], sav = di;
        for (int i = 0; i < 8; i++) {
            int16_t ui = u[i];
            u[i] = sav;
            sav = add(ui, mult_r(rp[i], di));
            di = add(di, mult_r(rp[i], ui));
        }
        s[k] = di;
    }
}

/* 4.2.11: LTP lag Nc (40..120) maximizing the cross-correlation of the residual d with the past
 * reconstructed residual dp, and the coded gain bc. */
static void ltp_parameters(const int16_t *d, const int16_t *dp, int16_t *Nc_out, int16_t *bc_out)
{
    int16_t dmax = 0;
    for (int k = 0; k < GSM_SUB; k++) {
        int16_t t = abs16(d[k]);
        if (t > dmax)
            dmax = t;
    }
    int t = dmax == 0 ? 0 : norm32((int32_t)dmax << 16);
    int scal = t > 6 ? 0 : 6 - t;
    int16_t wt[GSM_SUB];
    for (int k = 0; k < GSM_SUB; k++)
        wt[k] = (int16_t)(d[k] >> scal);

    /* The search is most of the encoder's work. scal leaves |wt| < 2^9, so 40 doubled products with
     * |dp| <= 2^15 stay below 2^31: the spec's saturating sum of L_mult equals this plain sum, doubled. */
    int32_t L_max = 0;
    int16_t Nc = 40;
    for (int lambda = 40; lambda <= 120; lambda++) {
        const int16_t *past = dp - lambda;
        int32_t acc = 0;
        for (int k = 0; k < GSM_SUB; k++)
            acc += (int32_t)wt[k] * past[k];
        acc *= 2;
        if (acc > L_max) {
            Nc = (int16_t)lambda;
            L_max = acc;
        }
    }
    *Nc_out = Nc;
    L_max >>= 6 - scal;

    int32_t L_power = 0; /* 40 doubled squares of 13-bit values: below 2^31 too */
    for (int k = 0; k < GSM_SUB; k++) {
        int32_t w = dp[k - Nc] >> 3;
        L_power += w * w;
    }
    L_power *= 2;
    if (L_max <= 0) {
        *bc_out = 0;
        return;
    }
    if (L_max >= L_power) {
        *bc_out = 3;
        return;
    }
    int n = norm32(L_power);
    int16_t R = (int16_t)(shl32(L_max, n) >> 16);
    int16_t S = (int16_t)(shl32(L_power, n) >> 16);
    int16_t bc = 0;
    while (bc <= 2 && R > mult(S, DLB[bc]))
        bc++;
    *bc_out = bc;
}

/* 4.2.15 (second half) and 4.3.1: exponent and normalized mantissa (0..7) of a coded block maximum. */
static void xmaxc_to_exp_mant(int16_t xmaxc, int16_t *exp_out, int16_t *mant_out)
{
    int16_t exp = xmaxc > 15 ? (int16_t)((xmaxc >> 3) - 1) : 0;
    int16_t mant = (int16_t)(xmaxc - (exp << 3));
    if (mant == 0) {
        exp = -4;
        mant = 7;
    } else {
        while (mant <= 7) {
            mant = (int16_t)(mant << 1 | 1);
            exp--;
        }
        mant -= 8;
    }
    *exp_out = exp;
    *mant_out = mant;
}

/* 4.2.16 / 4.3.1: inverse APCM, the 13 decoded pulses. */
static void apcm_inverse(const int16_t *xMc, int16_t exp, int16_t mant, int16_t *xMp)
{
    int16_t t1 = FAC[mant];
    int t2 = 6 - exp; /* 0..10 */
    int16_t t3 = (int16_t)(t2 > 0 ? 1 << (t2 - 1) : 0); /* rounding; the spec's 1 << -1 is 0 */
    for (int i = 0; i < 13; i++) {
        int16_t t = (int16_t)((xMc[i] * 2 - 7) * 4096); /* restore the sign, as Q12 */
        t = mult_r(t1, t);
        t = add(t, t3);
        xMp[i] = (int16_t)(t >> t2);
    }
}

/* 4.2.13-4.2.17: weighting filter, grid selection, APCM quantization of one sub-frame's LTP residual e;
 * e is replaced by its quantized reconstruction ep. */
static void rpe_encode(int16_t *e, int16_t *xmaxc_out, int16_t *Mc_out, int16_t *xMc)
{
    /* 4.2.13: e padded with 5 zeros on each side, filtered by H; rounding 8192 then scaled by 4 */
    int16_t w[GSM_SUB + 10] = {0};
    memcpy(w + 5, e, GSM_SUB * sizeof *e);
    int16_t x[GSM_SUB];
    for (int k = 0; k < GSM_SUB; k++) {
        /* sum |H| = 24798, so the doubled sum stays below 2^31 and only the final x4 can saturate */
        int32_t acc = 0;
        for (int i = 0; i < 11; i++)
            acc += (int32_t)w[k + i] * H[i];
        acc = 8192 + acc * 2;
        x[k] = (int16_t)(sat32((int64_t)acc * 4) >> 16);
    }

    /* 4.2.14: of the four decimated grids, the one with the most energy */
    int32_t EM = 0;
    int16_t Mc = 0;
    for (int m = 0; m < 4; m++) {
        int32_t acc = 0; /* 13 doubled squares of 14-bit values: below 2^31 */
        for (int i = 0; i < 13; i++) {
            int32_t t = x[m + 3 * i] >> 2;
            acc += t * t * 2;
        }
        if (acc > EM) {
            Mc = (int16_t)m;
            EM = acc;
        }
    }
    int16_t xM[13];
    for (int i = 0; i < 13; i++)
        xM[i] = x[Mc + 3 * i];

    /* 4.2.15: block maximum, coded as a 3-bit mantissa with an exponent */
    int16_t xmax = 0;
    for (int i = 0; i < 13; i++) {
        int16_t t = abs16(xM[i]);
        if (t > xmax)
            xmax = t;
    }
    int16_t exp = 0, t = (int16_t)(xmax >> 9);
    int itest = 0;
    for (int i = 0; i <= 5; i++) {
        itest |= t <= 0;
        t = (int16_t)(t >> 1);
        if (!itest)
            exp++;
    }
    int16_t xmaxc = add((int16_t)(xmax >> (exp + 5)), (int16_t)(exp << 3));

    /* the pulses normalized by the decoded maximum, as 3-bit codes */
    int16_t mant;
    xmaxc_to_exp_mant(xmaxc, &exp, &mant);
    int t1 = 6 - exp;
    int16_t t2 = NRFAC[mant];
    for (int i = 0; i < 13; i++) {
        int16_t q = shl16(xM[i], t1);
        q = mult(q, t2);
        xMc[i] = (int16_t)((q >> 12) + 4);
    }

    /* 4.2.16-4.2.17: what the decoder will reconstruct, placed back on the grid */
    int16_t xMp[13];
    apcm_inverse(xMc, exp, mant, xMp);
    memset(e, 0, GSM_SUB * sizeof *e);
    for (int i = 0; i < 13; i++)
        e[Mc + 3 * i] = xMp[i];
    *xmaxc_out = xmaxc;
    *Mc_out = Mc;
}

static void gsm_encode_frame(gsm_enc *st, const int16_t *in, gsm_params *f)
{
    int16_t s[GSM_N];
    preprocess(st, in, s);
    lpc_analysis(s, f->LARc);

    /* 4.2.8-4.2.10: the filter uses the decoded (quantized) LARs, as the decoder will */
    int16_t LARpp[8], LARp[8];
    decode_lar(f->LARc, LARpp);
    for (int seg = 0; seg < 4; seg++) {
        interpolate_lar(seg, st->LARpp_prev, LARpp, LARp);
        lar_to_rp(LARp);
        st_analysis(st->u, LARp, s, SEG_START[seg], SEG_START[seg + 1]);
    }
    memcpy(st->LARpp_prev, LARpp, sizeof LARpp);

    int16_t *dp = st->dp + 120;
    for (int j = 0; j < 4; j++) {
        const int16_t *d = s + j * GSM_SUB;
        int16_t *dpj = dp + j * GSM_SUB; /* dpj[-120..-1]: past reconstructed residual */
        ltp_parameters(d, dpj, &f->Nc[j], &f->bc[j]);
        /* 4.2.12: long-term analysis filter */
        int16_t bp = QLB[f->bc[j]], dpp[GSM_SUB], e[GSM_SUB];
        for (int k = 0; k < GSM_SUB; k++) {
            dpp[k] = mult_r(bp, dpj[k - f->Nc[j]]);
            e[k] = sub(d[k], dpp[k]);
        }
        rpe_encode(e, &f->xmaxc[j], &f->Mc[j], f->xMc[j]);
        /* 4.2.18: the reconstructed residual, the next sub-frames' LTP history */
        for (int k = 0; k < GSM_SUB; k++)
            dpj[k] = add(e[k], dpp[k]);
    }
    memmove(st->dp, st->dp + GSM_N, 120 * sizeof st->dp[0]);
}

/* ---- the decoder ---- */

typedef struct {
    int16_t LARpp_prev[8];
    int16_t v[9]; /* short-term synthesis lattice */
    int16_t nrp; /* last valid lag */
    int16_t msr; /* de-emphasis memory */
    int16_t drp[120 + GSM_SUB]; /* reconstructed residual: 120 past samples, then this sub-frame */
} gsm_dec;

static void gsm_decode_frame(gsm_dec *st, const gsm_params *f, int16_t *out)
{
    int16_t wt[GSM_N];
    int16_t *drp = st->drp + 120;
    for (int j = 0; j < 4; j++) {
        /* 4.3.1: RPE decoding */
        int16_t exp, mant, xMp[13], erp[GSM_SUB] = {0};
        xmaxc_to_exp_mant(f->xmaxc[j], &exp, &mant);
        apcm_inverse(f->xMc[j], exp, mant, xMp);
        for (int i = 0; i < 13; i++)
            erp[f->Mc[j] + 3 * i] = xMp[i];
        /* 4.3.2: long-term synthesis; an invalid lag (a channel error) repeats the last valid one */
        int16_t Nr = f->Nc[j] < 40 || f->Nc[j] > 120 ? st->nrp : f->Nc[j];
        st->nrp = Nr;
        int16_t brp = QLB[f->bc[j]];
        for (int k = 0; k < GSM_SUB; k++)
            drp[k] = add(erp[k], mult_r(brp, drp[k - Nr]));
        memcpy(wt + j * GSM_SUB, drp, GSM_SUB * sizeof *drp);
        memmove(st->drp, st->drp + GSM_SUB, 120 * sizeof st->drp[0]);
    }

    /* 4.3.3-4.3.4: short-term synthesis, lattice, with the same LAR interpolation as the encoder */
    int16_t LARpp[8], rrp[8];
    decode_lar(f->LARc, LARpp);
    int16_t *v = st->v;
    for (int seg = 0; seg < 4; seg++) {
        interpolate_lar(seg, st->LARpp_prev, LARpp, rrp);
        lar_to_rp(rrp);
        for (int k = SEG_START[seg]; k < SEG_START[seg + 1]; k++) {
            int16_t sri = wt[k];
            for (int i = 7; i >= 0; i--) {
                sri = sub(sri, mult_r(rrp[i], v[i]));
                v[i + 1] = add(v[i], mult_r(rrp[i], sri));
            }
            v[0] = sri;
            wt[k] = sri;
        }
    }
    memcpy(st->LARpp_prev, LARpp, sizeof LARpp);

    /* 4.3.5-4.3.7: de-emphasis, upscaling, truncation to 13 bits */
    int16_t msr = st->msr;
    for (int k = 0; k < GSM_N; k++) {
        msr = add(wt[k], mult_r(msr, 28180));
        out[k] = (int16_t)(add(msr, msr) & 0xFFF8);
    }
    st->msr = msr;
}

static void gsm_enc_reset(gsm_enc *st) { memset(st, 0, sizeof *st); }

static void gsm_dec_reset(gsm_dec *st)
{
    memset(st, 0, sizeof *st);
    st->nrp = 40;
}

/* ---- packing: RFC 3551 4.5.8, MSB first, after the signature nibble 0xD ---- */

typedef struct {
    uint8_t *p;
    uint32_t acc;
    int n; /* bits in acc */
} bitw;

static inline void put_bits(bitw *w, unsigned v, int bits)
{
    w->acc = w->acc << bits | (v & ((1u << bits) - 1));
    w->n += bits;
    while (w->n >= 8) {
        w->n -= 8;
        *w->p++ = (uint8_t)(w->acc >> w->n);
    }
}

static void gsm_pack(const gsm_params *f, uint8_t *out)
{
    bitw w = {out, 0, 0};
    put_bits(&w, 0xD, 4);
    for (int i = 0; i < 8; i++)
        put_bits(&w, (unsigned)f->LARc[i], LAR_BITS[i]);
    for (int j = 0; j < 4; j++) {
        put_bits(&w, (unsigned)f->Nc[j], 7);
        put_bits(&w, (unsigned)f->bc[j], 2);
        put_bits(&w, (unsigned)f->Mc[j], 2);
        put_bits(&w, (unsigned)f->xmaxc[j], 6);
        for (int i = 0; i < 13; i++)
            put_bits(&w, (unsigned)f->xMc[j][i], 3);
    }
}

typedef struct {
    const uint8_t *p;
    uint32_t acc;
    int n;
} bitr;

static inline int16_t get_bits(bitr *r, int bits)
{
    while (r->n < bits) {
        r->acc = r->acc << 8 | *r->p++;
        r->n += 8;
    }
    r->n -= bits;
    return (int16_t)((r->acc >> r->n) & ((1u << bits) - 1));
}

/* Returns the signature nibble (0xD for a GSM frame). */
static int gsm_unpack(const uint8_t *in, gsm_params *f)
{
    bitr r = {in, 0, 0};
    int sig = get_bits(&r, 4);
    for (int i = 0; i < 8; i++)
        f->LARc[i] = get_bits(&r, LAR_BITS[i]);
    for (int j = 0; j < 4; j++) {
        f->Nc[j] = get_bits(&r, 7);
        f->bc[j] = get_bits(&r, 2);
        f->Mc[j] = get_bits(&r, 2);
        f->xmaxc[j] = get_bits(&r, 6);
        for (int i = 0; i < 13; i++)
            f->xMc[j][i] = get_bits(&r, 3);
    }
    return sig;
}

/* A whole stream: reset state, code every frame. These are what a rep times. */
static void gsm_encode_stream(const int16_t *pcm, size_t frames, uint8_t *out)
{
    gsm_enc st;
    gsm_enc_reset(&st);
    for (size_t i = 0; i < frames; i++) {
        gsm_params f;
        gsm_encode_frame(&st, pcm + i * GSM_N, &f);
        gsm_pack(&f, out + i * GSM_BYTES);
    }
}

static void gsm_decode_stream(const uint8_t *in, size_t frames, int16_t *pcm)
{
    gsm_dec st;
    gsm_dec_reset(&st);
    for (size_t i = 0; i < frames; i++) {
        gsm_params f;
        gsm_unpack(in + i * GSM_BYTES, &f);
        gsm_decode_frame(&st, &f, pcm + i * GSM_N);
    }
}

/* ---- the input: deterministic, speech-like, integer arithmetic only (identical on every board) ---- */

/* A two-pole resonator y[n] = x[n] + a1 y[n-1] + a2 y[n-2], coefficients in Q14:
 * a1 = 2 r cos(2 pi F / 8000), a2 = -r^2, r = exp(-pi B / 8000). Its impulse response is a damped sinusoid
 * at F, so a pitch pulse train through a few of them in parallel is a sum of formant-like sinusoids. */
typedef struct {
    int32_t a1, a2;
} reso_coef;

typedef struct {
    int64_t y1, y2;
} reso;

static inline int64_t reso_step(reso *r, const reso_coef *c, int64_t x)
{
    int64_t y = x + ((c->a1 * r->y1 + c->a2 * r->y2) >> 14);
    r->y2 = r->y1;
    r->y1 = y;
    return y;
}

/* Formants (F Hz / bandwidth Hz) of five vowels, Peterson & Barney-like: a 730/90 1090/110 2440/160,
 * i 270/60 2290/120 3010/200, u 300/60 870/90 2240/150, e 530/70 1840/110 2480/160, o 570/70 840/90
 * 2410/160. Precomputed so that no libm rounding can make two boards' inputs differ. */
static const reso_coef VOWELS[5][3] = {
    {{26572, -15266}, {20568, -15028}, {-10424, -14449}}, {{31288, -15630}, {-7058, -14910}, {-21588, -14002}},
    {{31121, -15630}, {24529, -15266}, {-5789, -14563}},  {{29157, -15508}, {3933, -15028}, {-11328, -14449}},
    {{28738, -15508}, {24993, -15266}, {-9739, -14449}},
};
/* Fricative noise colouring: "s" 3300/700 Hz and "sh" 2300/500 Hz. */
static const reso_coef FRICATIVES[2] = {{-21224, -9455}, {-6286, -11063}};

static int32_t rand_range(uint64_t *rng, int32_t lo, int32_t hi)
{
    return lo + (int32_t)(bk_rand_next(rng) % (uint64_t)(hi - lo + 1));
}

/* Syllables of 125-300 ms voiced speech (a glottal pulse train at 80-160 Hz, gliding, with jitter and
 * aspiration noise, through three vowel formants) or 50-150 ms of fricative noise, each under a linear
 * attack/release envelope at its own level, some followed by pauses; then scaled to a 26000 peak and mixed
 * with a low background noise. */
static void gen_speech(int16_t *pcm, size_t n, uint64_t seed)
{
    uint64_t rng = seed * 0x9e3779b97f4a7c15ULL + 0x6a09e667f3bcc909ULL;
    int64_t *raw = malloc(n * sizeof *raw);
    if (!raw) {
        memset(pcm, 0, n * sizeof *pcm);
        return;
    }
    size_t t = 0;
    int64_t lp = 0; /* glottal source low-pass (spectral tilt) */
    reso r[3] = {{0}};
    while (t < n) {
        int voiced = rand_range(&rng, 0, 3) != 0;
        size_t len = (size_t)(voiced ? rand_range(&rng, 1000, 2400) : rand_range(&rng, 400, 1200));
        int32_t level = rand_range(&rng, 8000, 32767); /* Q15 */
        const reso_coef *f = voiced ? VOWELS[rand_range(&rng, 0, 4)] : &FRICATIVES[rand_range(&rng, 0, 1)];
        int32_t p0 = rand_range(&rng, 50 * 256, 100 * 256); /* pitch period, Q8 samples */
        int32_t p1 = p0 + rand_range(&rng, -p0 / 7, p0 / 7);
        int32_t phase = 0;
        size_t attack = len / 6, release = len / 3;
        for (size_t k = 0; k < len && t < n; k++, t++) {
            int64_t env = 32768; /* Q15 */
            if (k < attack)
                env = (int64_t)(32768 * k / attack);
            else if (k >= len - release)
                env = (int64_t)(32768 * (len - k) / release);
            int64_t y;
            if (voiced) {
                int64_t src = rand_range(&rng, -200, 200); /* aspiration */
                phase -= 256;
                if (phase <= 0) {
                    src += 8192;
                    int32_t period = p0 + (int32_t)((int64_t)(p1 - p0) * (int64_t)k / (int64_t)len);
                    phase += period + rand_range(&rng, -64, 64); /* jitter: +-1/4 sample */
                }
                lp = src + ((lp * 30000) >> 15);
                y = 4 * reso_step(&r[0], &f[0], lp) + 2 * reso_step(&r[1], &f[1], lp) + reso_step(&r[2], &f[2], lp);
            } else {
                y = 8 * reso_step(&r[0], f, rand_range(&rng, -4096, 4096));
            }
            raw[t] = y * env / 32768 * level / 32768;
        }
        if (rand_range(&rng, 0, 9) < 3) /* a pause */
            for (size_t k = (size_t)rand_range(&rng, 160, 1200); k > 0 && t < n; k--, t++)
                raw[t] = 0;
        memset(r, 0, sizeof r);
        lp = 0;
    }
    int64_t peak = 1;
    for (size_t i = 0; i < n; i++)
        if (llabs(raw[i]) > peak)
            peak = llabs(raw[i]);
    for (size_t i = 0; i < n; i++) {
        int64_t v = raw[i] * 26000 / peak + rand_range(&rng, -16, 16);
        pcm[i] = (int16_t)(v > INT16_MAX ? INT16_MAX : v < INT16_MIN ? INT16_MIN : v);
    }
    free(raw);
}

/* ---- checks shared by verify ---- */

/* FNV-1a of samples as little-endian bytes, so the value does not depend on the host's byte order. */
static uint64_t fnv_pcm(uint64_t h, const int16_t *x, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint8_t b[2] = {(uint8_t)((uint16_t)x[i] & 0xFF), (uint8_t)((uint16_t)x[i] >> 8)};
        h = bk_fnv1a(h, b, 2);
    }
    return h;
}

/* Counts the parameters outside their bit widths (LARc 6,6,5,5,4,4,3,3 bits; bc, Mc 2; xmaxc 6; xMc 3) or,
 * for Nc, outside the lags the LTP search may choose (40..120 in 7 bits). */
static int params_out_of_range(const gsm_params *f)
{
    int bad = 0;
    for (int i = 0; i < 8; i++)
        bad += f->LARc[i] < 0 || f->LARc[i] >= 1 << LAR_BITS[i];
    for (int j = 0; j < 4; j++) {
        bad += f->Nc[j] < 40 || f->Nc[j] > 120;
        bad += f->bc[j] < 0 || f->bc[j] > 3;
        bad += f->Mc[j] < 0 || f->Mc[j] > 3;
        bad += f->xmaxc[j] < 0 || f->xmaxc[j] > 63;
        for (int i = 0; i < 13; i++)
            bad += f->xMc[j][i] < 0 || f->xMc[j][i] > 7;
    }
    return bad;
}

/* Segmental SNR (dB) of y against x: the mean over 20 ms segments of each segment's SNR, clamped to
 * [-10, 35] dB as is usual (one silent or perfect segment must not dominate), over active segments only
 * (RMS >= 100, i.e. above the -50 dBFS background of the synthetic input). */
static double segmental_snr_db(const int16_t *x, const int16_t *y, size_t frames, size_t *active)
{
    double sum = 0;
    size_t n = 0;
    for (size_t f = 0; f < frames; f++) {
        double es = 0, en = 0;
        for (size_t k = f * GSM_N; k < (f + 1) * GSM_N; k++) {
            double d = (double)x[k] - (double)y[k];
            es += (double)x[k] * x[k];
            en += d * d;
        }
        if (es < (double)GSM_N * 100.0 * 100.0)
            continue;
        double snr = en > 0 ? 10.0 * log10(es / en) : 35.0;
        sum += snr < -10.0 ? -10.0 : snr > 35.0 ? 35.0 : snr;
        n++;
    }
    *active = n;
    return n ? sum / (double)n : NAN;
}

static double correlation(const int16_t *x, const int16_t *y, size_t n)
{
    double sx = 0, sy = 0, sxx = 0, syy = 0, sxy = 0;
    for (size_t i = 0; i < n; i++) {
        sx += x[i];
        sy += y[i];
        sxx += (double)x[i] * x[i];
        syy += (double)y[i] * y[i];
        sxy += (double)x[i] * y[i];
    }
    double N = (double)n, cov = sxy - sx * sy / N, vx = sxx - sx * sx / N, vy = syy - sy * sy / N;
    return vx > 0 && vy > 0 ? cov / sqrt(vx * vy) : 0.0;
}

/* The known-answer input: silence; 20 frames of the synthetic speech (seed 1); full-scale white noise;
 * a long full-scale negative DC stepping to full-scale positive (it drives the pre-emphasis into
 * saturation and the autocorrelation's rescaling past 16 bits, the spec's corner cases); a full-scale
 * Nyquist square wave; silence again. */
#define KAT_FRAMES 46
static void kat_input(int16_t *x)
{
    memset(x, 0, KAT_FRAMES * GSM_N * sizeof *x);
    gen_speech(x + 2 * GSM_N, 20 * GSM_N, 1);
    uint64_t rng = 0x5eed;
    for (size_t i = 22 * GSM_N; i < 28 * GSM_N; i++)
        x[i] = (int16_t)(uint16_t)bk_rand_next(&rng);
    for (size_t i = 28 * GSM_N; i < 42 * GSM_N; i++)
        x[i] = i < 40 * GSM_N ? INT16_MIN : INT16_MAX;
    for (size_t i = 42 * GSM_N; i < 44 * GSM_N; i++)
        x[i] = i & 1 ? INT16_MAX : INT16_MIN;
}

/* What libgsm 1.0.22 (Debian's libgsm1: the TU Berlin implementation that MiBench's toast is built on, an
 * implementation independent of this one) gives for kat_input(): FNV-1a of its 33-octet frames and of its
 * decoded samples (little-endian). During development this codec was also compared with libgsm on 18 more
 * signals (synthetic speech of five seeds, full-scale noise, square waves, chirps, steps, impulses, DC,
 * tiny noise, and 20000 random frames into the decoder): bit-exact on all. */
#define KAT_STREAM_FNV 0x7e884ec7f2540dcdULL
#define KAT_DECODED_FNV 0x423943a5cc15f7a2ULL

/* The silence frame, worked out from the spec by hand: LAR = 0 codes as (B + 256) >> 9 - MIC
 * = 32, 32, 20, 11, 8, 5, 3, 2; no correlation leaves Nc = 40, bc = 0; zero energy selects grid Mc = 0
 * with xmaxc = 0; and the mid-rise quantizer's smallest positive level codes each pulse as 4. */
static const int16_t SILENCE_LARC[8] = {32, 32, 20, 11, 8, 5, 3, 2};
/* ... and packed (RFC 3551): 1101 100000 100000 10100 01011 1000 0101 011 010, then four times
 * Nc 0101000, bc 00, Mc 00, xmaxc 000000, xMc 13 x 100. */
static const uint8_t SILENCE_FRAME[GSM_BYTES] = {
    0xd8, 0x20, 0xa2, 0xe1, 0x5a, 0x50, 0x00, 0x49, 0x24, 0x92, 0x49, 0x24, 0x50, 0x00, 0x49, 0x24, 0x92,
    0x49, 0x24, 0x50, 0x00, 0x49, 0x24, 0x92, 0x49, 0x24, 0x50, 0x00, 0x49, 0x24, 0x92, 0x49, 0x24,
};

/* The round-trip thresholds, for the synthetic input of at least ROUND_TRIP_MIN_FRAMES frames.
 * Measured with this codec (bit-exact with libgsm) over seeds 0..1999: at 100 frames the segmental SNR is
 * 3.4..10.5 dB (mean 6.9) and the correlation >= 0.80; at 500 frames 5.5..7.5 dB and >= 0.96; at 2000
 * frames about 6.5 dB and 0.98. Shorter runs vary too much (a single frame ranges from -4.7 to 23 dB, as
 * the codec starts without LTP history), so they are not judged on it. Decoders broken on purpose fall
 * well below the thresholds: LTP gain lost or lag off by one about 0 dB (correlation <= 0.4), pulse signs
 * flipped -5 dB (-0.75), de-emphasis missing 0.5 dB, block-maximum exponent off by one -2 dB. A wrong RPE
 * grid (about 3 dB, 0.72..0.9) or a subtly wrong LAR is beyond what these statistics can tell apart: the
 * libgsm known answers catch those. */
#define ROUND_TRIP_MIN_FRAMES 100
#define SNR_THRESHOLD_DB 2.5
#define CORR_THRESHOLD 0.6

/* ---- the kernel ---- */

typedef struct {
    size_t frames;
    bool synthetic; /* the generated input, for which the SNR thresholds hold */
    int16_t *pcm; /* input, frames * 160 */
    uint8_t *stream; /* encoded, frames * 33 */
    int16_t *out; /* decoded, frames * 160 */
    uint8_t *stream2; /* verify's own encode */
    int16_t *out2; /* verify's own decode */
} gsm_state;

static const bk_param gsm_kparams[] = {
    {"frames", BK_INT, 1, 200000, "250", NULL, "frames",
     "160-sample (20 ms) frames coded per rep (250 = 5 s of speech); ignored with input_path, whose whole "
     "file is coded"},
    {"seed", BK_INT, 0, 2147483647, "1", NULL, NULL, "seed of the synthetic speech-like input"},
    {"input_path", BK_STR, 0, 0, "", NULL, NULL,
     "optional raw 16-bit little-endian 8 kHz mono PCM file to code instead of the synthetic input "
     "(a partial last frame is zero-padded, as toast does)"},
    {0},
};

static const bk_metric gsm_metrics[] = {
    {"frames_per_s", "frames/s", true, BK_RATE, -1, 1.0, "frames encoded and decoded per second"},
    {"encode_frames_per_s", "frames/s", true, BK_RATE, 0, 1.0, "frames encoded (and packed) per second"},
    {"decode_frames_per_s", "frames/s", true, BK_RATE, 1, 1.0, "frames (unpacked and) decoded per second"},
    {0},
};

static const char *const gsm_phases[] = {"encode", "decode", NULL};

/* Reads a raw s16le file into s->pcm; returns 0 or a bk_fail. */
static int read_input(bk_ctx *ctx, gsm_state *s, const char *path, int64_t max_frames)
{
    /* O_NONBLOCK: a FIFO opens at once (and is refused below) instead of waiting for a writer */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
        return bk_bad_input(ctx, "input_path '%s' cannot be opened (%s): give a readable raw 16-bit PCM file", path,
                            strerror(errno));
    struct stat st;
    FILE *f = NULL;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || !(f = fdopen(fd, "rb"))) {
        close(fd);
        return bk_bad_input(ctx,
                            "input_path '%s' is not a regular file (a FIFO, device or directory): give a raw "
                            "16-bit PCM file",
                            path);
    }
    int rc = 0;
    uint8_t *bytes = NULL;
    size_t cap = 0, len = 0;
    for (;;) {
        if (len == cap) {
            cap = cap ? 2 * cap : 1 << 20;
            uint8_t *b = realloc(bytes, cap);
            if (!b) {
                rc = bk_fail(ctx, "out of memory reading input_path '%s'", path);
                break;
            }
            bytes = b;
        }
        size_t got = fread(bytes + len, 1, cap - len, f);
        len += got;
        if (got == 0 || len > (size_t)max_frames * GSM_N * 2)
            break;
    }
    fclose(f);
    if (rc == 0 && len == 0)
        rc = bk_bad_input(ctx, "input_path '%s' is empty: give a raw 16-bit PCM file of at least one sample", path);
    else if (rc == 0 && len % 2)
        rc = bk_bad_input(ctx, "input_path '%s' has an odd size (%zu bytes): it must be raw 16-bit PCM", path, len);
    else if (rc == 0 && len > (size_t)max_frames * GSM_N * 2)
        rc = bk_bad_input(ctx, "input_path '%s' holds more than %" PRId64 " frames: give a shorter file", path,
                          max_frames);
    if (rc == 0) {
        size_t n = len / 2;
        s->frames = (n + GSM_N - 1) / GSM_N;
        s->pcm = bk_run_alloc(ctx, s->frames * GSM_N * sizeof *s->pcm, "the input's frames");
        if (!s->pcm)
            rc = -1;
        for (size_t i = 0; rc == 0 && i < n; i++)
            s->pcm[i] = (int16_t)(uint16_t)(bytes[2 * i] | bytes[2 * i + 1] << 8);
    }
    free(bytes);
    return rc;
}

static int gsm_init(bk_ctx *ctx, void **state)
{
    gsm_state *s = bk_run_state(ctx, state, sizeof *s);
    if (!s)
        return -1;
    const char *path = bk_arg_str(ctx, "input_path");
    if (path && *path) {
        if (read_input(ctx, s, path, (int64_t)gsm_kparams[0].max) != 0)
            return -1;
        bk_info_str(ctx, "input", path);
    } else {
        s->synthetic = true;
        s->frames = (size_t)bk_arg_int(ctx, "frames");
        s->pcm = bk_run_alloc(ctx, s->frames * GSM_N * sizeof *s->pcm, "the frames");
        if (!s->pcm)
            return -1;
        gen_speech(s->pcm, s->frames * GSM_N, (uint64_t)bk_arg_int(ctx, "seed"));
        bk_info_str(ctx, "input", "synthetic speech-like signal (formants, pitch pulses, fricatives, pauses)");
    }
    s->stream = bk_run_alloc(ctx, s->frames * GSM_BYTES, "the encoded stream");
    s->stream2 = bk_run_alloc(ctx, s->frames * GSM_BYTES, "the encoded stream");
    s->out = bk_run_alloc(ctx, s->frames * GSM_N * sizeof *s->out, "the decoded frames");
    s->out2 = bk_run_alloc(ctx, s->frames * GSM_N * sizeof *s->out2, "the decoded frames");
    if (!s->stream || !s->stream2 || !s->out || !s->out2)
        return -1;
    bk_info_num(ctx, "frames", (double)s->frames);
    bk_info_num(ctx, "audio_seconds", (double)s->frames * 0.02);
    bk_info_num(ctx, "stream_bytes", (double)(s->frames * GSM_BYTES));
    for (int m = 0; gsm_metrics[m].name; m++)
        bk_set_amount(ctx, gsm_metrics[m].name, (double)s->frames);
    return 0;
}

static int gsm_run(bk_ctx *ctx, void *state, uint64_t reps)
{
    gsm_state *s = state;
    for (uint64_t r = 0; r < reps; r++) {
        bk_phase_begin(ctx, 0);
        gsm_encode_stream(s->pcm, s->frames, s->stream);
        bk_phase_end(ctx, 0);
        bk_phase_begin(ctx, 1);
        gsm_decode_stream(s->stream, s->frames, s->out);
        bk_phase_end(ctx, 1);
    }
    BK_KEEP(s->out[0]);
    return 0;
}

/* Flips one coded pulse bit in a middle frame of the stream and one bit of a decoded sample. */
static void gsm_corrupt(void *state)
{
    gsm_state *s = state;
    size_t f = s->frames / 2;
    s->stream[f * GSM_BYTES + 20] ^= 0x10;
    s->out[f * GSM_N + 80] ^= 0x0400;
}

/* Known answers, independent of the run's parameters: the silence frame, and libgsm's results on
 * kat_input(). Returns the number of failures (each reported). */
static int check_known_answers(bk_ctx *ctx)
{
    int bad = 0;
    gsm_enc enc;
    gsm_enc_reset(&enc);
    int16_t zero[GSM_N] = {0};
    gsm_params f;
    gsm_encode_frame(&enc, zero, &f);
    bool ok = memcmp(f.LARc, SILENCE_LARC, sizeof SILENCE_LARC) == 0;
    for (int j = 0; j < 4; j++) {
        ok = ok && f.Nc[j] == 40 && f.bc[j] == 0 && f.Mc[j] == 0 && f.xmaxc[j] == 0;
        for (int i = 0; i < 13; i++)
            ok = ok && f.xMc[j][i] == 4;
    }
    uint8_t packed[GSM_BYTES];
    gsm_pack(&f, packed);
    if (memcmp(packed, SILENCE_FRAME, GSM_BYTES) != 0) {
        bad++;
        bk_fail(ctx, "known answer: a silent frame does not pack into the RFC 3551 octets worked out by hand");
    }
    if (!ok) {
        bad++;
        bk_fail(ctx,
                "known answer: a silent frame codes as LARc %d,%d,%d,%d,%d,%d,%d,%d Nc %d bc %d Mc %d xmaxc %d, "
                "expected LARc 32,32,20,11,8,5,3,2 Nc 40 bc 0 Mc 0 xmaxc 0 and every xMc 4",
                f.LARc[0], f.LARc[1], f.LARc[2], f.LARc[3], f.LARc[4], f.LARc[5], f.LARc[6], f.LARc[7], f.Nc[0],
                f.bc[0], f.Mc[0], f.xmaxc[0]);
    }

    int16_t *x = malloc(2 * KAT_FRAMES * GSM_N * sizeof *x);
    uint8_t *st = malloc(KAT_FRAMES * GSM_BYTES);
    if (!x || !st) {
        free(x);
        free(st);
        bk_fail(ctx, "out of memory for the known-answer test");
        return bad + 1;
    }
    kat_input(x);
    gsm_encode_stream(x, KAT_FRAMES, st);
    gsm_decode_stream(st, KAT_FRAMES, x + KAT_FRAMES * GSM_N);
    uint64_t hs = bk_fnv1a(BK_FNV_OFFSET, st, KAT_FRAMES * GSM_BYTES);
    uint64_t hd = fnv_pcm(BK_FNV_OFFSET, x + KAT_FRAMES * GSM_N, KAT_FRAMES * GSM_N);
    if (hs != KAT_STREAM_FNV) {
        bad++;
        bk_fail(ctx,
                "known answer: the %d-frame test input encodes to stream FNV %016" PRIx64 ", libgsm gives %016" PRIx64,
                KAT_FRAMES, hs, (uint64_t)KAT_STREAM_FNV);
    }
    if (hd != KAT_DECODED_FNV) {
        bad++;
        bk_fail(ctx,
                "known answer: the %d-frame test stream decodes to samples FNV %016" PRIx64
                ", libgsm gives %016" PRIx64,
                KAT_FRAMES, hd, (uint64_t)KAT_DECODED_FNV);
    }
    free(x);
    free(st);
    return bad;
}

static int gsm_verify(bk_ctx *ctx, void *state)
{
    gsm_state *s = state;
    int bad = 0;

    /* (1) structure and determinism: encode again frame by frame from reset state, checking every
     * parameter's range and the packing round trip, and compare with the timed run's stream */
    gsm_enc enc;
    gsm_enc_reset(&enc);
    size_t out_of_range = 0, pack_errors = 0;
    for (size_t i = 0; i < s->frames; i++) {
        gsm_params f, g;
        gsm_encode_frame(&enc, s->pcm + i * GSM_N, &f);
        out_of_range += (size_t)params_out_of_range(&f);
        gsm_pack(&f, s->stream2 + i * GSM_BYTES);
        pack_errors += gsm_unpack(s->stream2 + i * GSM_BYTES, &g) != 0xD || memcmp(&f, &g, sizeof f) != 0;
    }
    bk_info_num(ctx, "parameters_out_of_range", (double)out_of_range);
    if (out_of_range) {
        bad++;
        bk_fail(ctx, "%zu encoded parameters lie outside their bit widths (or Nc outside 40..120)", out_of_range);
    }
    if (pack_errors) {
        bad++;
        bk_fail(ctx, "%zu frames do not survive packing into 33 octets and unpacking", pack_errors);
    }
    for (size_t i = 0; i < s->frames; i++)
        if (memcmp(s->stream + i * GSM_BYTES, s->stream2 + i * GSM_BYTES, GSM_BYTES) != 0) {
            bad++;
            bk_fail(ctx, "encoded stream differs from a fresh encode of the same input at frame %zu", i);
            break;
        }
    gsm_decode_stream(s->stream2, s->frames, s->out2);
    for (size_t i = 0; i < s->frames * GSM_N; i++)
        if (s->out[i] != s->out2[i]) {
            bad++;
            bk_fail(ctx, "decoded sample %zu is %d, a fresh decode gives %d", i, s->out[i], s->out2[i]);
            break;
        }

    /* (2) the round trip: GSM is lossy, so the decoded signal must be close to the input, not equal */
    size_t active = 0;
    double snr = segmental_snr_db(s->pcm, s->out, s->frames, &active);
    double corr = correlation(s->pcm, s->out, s->frames * GSM_N);
    bk_info_num(ctx, "segmental_snr_db", isfinite(snr) ? snr : -99.0);
    bk_info_num(ctx, "active_segments", (double)active);
    bk_info_num(ctx, "correlation", corr);
    if (s->synthetic && s->frames >= ROUND_TRIP_MIN_FRAMES) {
        bk_info_num(ctx, "snr_threshold_db", SNR_THRESHOLD_DB);
        bk_info_num(ctx, "correlation_threshold", CORR_THRESHOLD);
        if (!(snr >= SNR_THRESHOLD_DB)) {
            bad++;
            bk_fail(ctx, "round trip: segmental SNR %.2f dB is below %.1f dB", snr, SNR_THRESHOLD_DB);
        }
        if (!(corr >= CORR_THRESHOLD)) {
            bad++;
            bk_fail(ctx, "round trip: correlation %.4f of decoded with input is below %.2f", corr, CORR_THRESHOLD);
        }
    } else {
        bk_info_str(ctx, "round_trip_thresholds",
                    s->synthetic ? "not applied: fewer than 100 frames (2 s) make segmental SNR too variable"
                                 : "not applied: they are calibrated for the synthetic input only");
    }

    /* (3) known answers */
    int kat = check_known_answers(ctx);
    bk_info_str(ctx, "known_answers", kat ? "FAILED" : "silence frame and libgsm 1.0.22 vectors match");
    bad += kat;

    char hex[17];
    snprintf(hex, sizeof hex, "%016" PRIx64, fnv_pcm(BK_FNV_OFFSET, s->out, s->frames * GSM_N));
    bk_info_str(ctx, "decoded_fnv", hex);
    bk_set_checksum(ctx, bk_fnv1a(BK_FNV_OFFSET, s->stream, s->frames * GSM_BYTES));
    return bad ? -1 : 0;
}

const bk_kernel bk_mibench_gsm = {
    .name = "mibench.gsm",
    .family = "mibench",
    .summary = "GSM 06.10 full-rate speech codec (RPE-LTP, 13 kbit/s), encode + decode, bit-exact fixed point",
    .params = gsm_kparams,
    .metrics = gsm_metrics,
    .phases = gsm_phases,
    .init = gsm_init,
    .run = gsm_run,
    .corrupt = gsm_corrupt,
    .verify = gsm_verify,
};
