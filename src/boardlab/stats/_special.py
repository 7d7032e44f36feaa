"""Special functions in plain Python: incomplete beta, Student t, binomial tails, ranks, percentiles.

The on-board path has only the standard library, so nothing here may import numpy or scipy. Tests check
every function against scipy to 1e-10 or better.
"""

from __future__ import annotations

import math
from array import array
from collections import deque
from collections.abc import Callable, Sequence
from functools import lru_cache
from itertools import compress, islice
from operator import eq, lt
from statistics import NormalDist

_NORMAL = NormalDist()
_TINY = 1e-300
_EPS = 1e-15


def normal_cdf(z: float) -> float:
    return _NORMAL.cdf(z)


def normal_ppf(q: float) -> float:
    return _NORMAL.inv_cdf(q)


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function, modified Lentz's method.

    Press, Teukolsky, Vetterling & Flannery, *Numerical Recipes* 3rd ed. (2007), section 6.4, `betacf`.
    """
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c = 1.0
    d = 1.0 - qab * x / qap
    d = _TINY if abs(d) < _TINY else d
    d = 1.0 / d
    h = d
    for m in range(1, 100_000):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = _TINY if abs(d) < _TINY else d
        c = 1.0 + aa / c
        c = _TINY if abs(c) < _TINY else c
        d = 1.0 / d
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = _TINY if abs(d) < _TINY else d
        c = 1.0 + aa / c
        c = _TINY if abs(c) < _TINY else c
        d = 1.0 / d
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < _EPS:
            return h
    raise ArithmeticError(f"incomplete beta did not converge for a={a}, b={b}, x={x}")  # pragma: no cover


def betainc(a: float, b: float, x: float) -> float:
    """Regularized incomplete beta function I_x(a, b) for a, b > 0 and 0 <= x <= 1.

    Method: continued fraction (Numerical Recipes 3rd ed., section 6.4), evaluated on the side of
    x = (a + 1) / (a + b + 2) where it converges fast, with the symmetry I_x(a, b) = 1 - I_{1-x}(b, a).
    """
    if not (a > 0 and b > 0):
        raise ValueError(f"betainc needs a > 0 and b > 0, got a={a}, b={b}")
    if not 0.0 <= x <= 1.0:
        raise ValueError(f"betainc needs 0 <= x <= 1, got {x}")
    if x == 0.0 or x == 1.0:
        return x
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _betacf(a, b, x) / a
    return 1.0 - math.exp(log_front) * _betacf(b, a, 1.0 - x) / b


# --- Student t -------------------------------------------------------------------------------------------


def student_t_sf(t: float, df: float) -> float:
    """P(T > t) for Student's t with `df` degrees of freedom: 0.5 * I_{df/(df+t^2)}(df/2, 1/2) for t >= 0.

    Abramowitz & Stegun (1964) 26.5.27 / 26.7.1.
    """
    if df <= 0:
        raise ValueError(f"degrees of freedom must be positive, got {df}")
    if math.isinf(t):
        return 0.0 if t > 0 else 1.0
    tail = 0.5 * betainc(df / 2.0, 0.5, df / (df + t * t))
    return tail if t >= 0 else 1.0 - tail


def student_t_cdf(t: float, df: float) -> float:
    return student_t_sf(-t, df)


def exp_or_inf(x: float) -> float:
    """e**x, +inf where that passes the largest float: the ratio of two positive run values (down to
    5e-324 and up to 1.8e308) and its interval can, and an unbounded ratio is an answer, not an error."""
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf


def inverse(x: float) -> float:
    """1 / x of a ratio >= 0, with 1 / 0 = +inf and 1 / inf = 0: a ratio interval of runs 1e300 apart
    reaches both ends (exp_or_inf), and its inverse is the cost ratio's."""
    return math.inf if x == 0.0 else 1.0 / x


def student_t_pdf(t: float, df: float) -> float:
    log_pdf = (
        math.lgamma((df + 1) / 2)
        - math.lgamma(df / 2)
        - 0.5 * math.log(df * math.pi)
        - (df + 1) / 2 * math.log1p(t * t / df)
    )
    return math.exp(log_pdf)


@lru_cache(maxsize=512)  # a report asks for the same few (level, df) pairs once per cell
def student_t_ppf(q: float, df: float) -> float:
    """Inverse CDF (quantile) of Student's t: the t with P(T <= t) = q.

    Method: invert `student_t_cdf` (itself the regularized incomplete beta) by Newton's method started at
    the normal quantile and safeguarded by bisection on a bracket that always contains the root; converged
    to a relative 1e-14. Checked against `scipy.stats.t.ppf` in the tests.
    """
    if not 0.0 < q < 1.0:
        if q == 0.0:
            return -math.inf
        if q == 1.0:
            return math.inf
        raise ValueError(f"quantile level must be in [0, 1], got {q}")
    if df <= 0:
        raise ValueError(f"degrees of freedom must be positive, got {df}")
    if q == 0.5:
        return 0.0
    if q < 0.5:
        return -_student_t_isf(q, df)
    return _student_t_isf(1.0 - q, df)


def _student_t_isf(target_sf: float, df: float) -> float:
    """The t > 0 with P(T > t) = target_sf < 0.5 (taking the tail directly keeps small tails exact)."""
    z = -normal_ppf(target_sf)
    lo, hi = 0.0, max(1.0, 2.0 * z)
    while student_t_sf(hi, df) > target_sf:
        lo, hi = hi, hi * 2.0
    t = min(max(z, lo), hi)
    for _ in range(200):
        f = student_t_sf(t, df) - target_sf  # decreasing in t
        if f > 0:
            lo = t
        else:
            hi = t
        pdf = student_t_pdf(t, df)
        step = f / pdf if pdf > 0 else math.inf
        new_t = t + step
        if not lo < new_t < hi:
            new_t = 0.5 * (lo + hi)
        if abs(new_t - t) <= 1e-14 * max(1.0, abs(t)):
            return new_t
        t = new_t
    return t  # pragma: no cover


# --- Binomial tails -----------------------------------------------------------------------------------------


def binom_sf_ge(k: int, n: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p) = I_p(k, n - k + 1) (Abramowitz & Stegun 26.5.24)."""
    if k <= 0:
        return 1.0
    if k > n:
        return 0.0
    if p <= 0.0:
        return 0.0
    if p >= 1.0:
        return 1.0
    return betainc(k, n - k + 1, p)


def half_binom_cdf(n: int, j: int) -> float:
    """P(X <= j) for X ~ Binomial(n, 1/2); exact rational arithmetic for n <= 1000."""
    if j < 0:
        return 0.0
    if j >= n:
        return 1.0
    if n <= 1000:
        return sum(math.comb(n, i) for i in range(j + 1)) / (1 << n)  # int / int rounds correctly
    return 1.0 - binom_sf_ge(j + 1, n, 0.5)


# --- Ranks and percentiles --------------------------------------------------------------------------------


def rank_average(values: Sequence[float]) -> tuple[array[float], list[int]]:
    """Ranks 1..n with ties given their average rank, and the sizes of the tie groups (size >= 2 only).

    The same ranking as `scipy.stats.rankdata(method="average")`. One sort; the ranks are scattered back
    and tie groups found with C-level iteration, so only tied values cost a Python step each. The ranks are
    a column of doubles (8 bytes a value, not a list's 33: a cell of 300,000 runs is ranked twice for its
    drift check).
    """
    n = len(values)
    if all(map(lt, values, islice(values, 1, None))):  # already strictly increasing (run order): 1..n
        return array("d", range(1, n + 1)), []
    order = array("q", sorted(range(n), key=values.__getitem__))  # the sort's list of ints let go at once
    return ranks_of_sorted(order, list(map(values.__getitem__, order)))


def ranks_of_sorted(order: Sequence[int], in_order: Sequence[float]) -> tuple[array[float], list[int]]:
    """`rank_average` of values whose sorting permutation is `order` (in_order[r] = values[order[r]])."""
    n = len(order)
    rank_in_order = array("d", range(1, n + 1))
    ties: list[int] = []
    tied_at = list(compress(range(n - 1), map(eq, in_order, islice(in_order, 1, None))))
    g = 0
    while g < len(tied_at):  # a tie group: consecutive positions i..j with in_order[p] == in_order[p + 1]
        i = j = tied_at[g]
        while g < len(tied_at) and tied_at[g] == j:
            j += 1
            g += 1
        rank = (i + j) / 2.0 + 1.0
        rank_in_order[i : j + 1] = array("d", [rank]) * (j - i + 1)
        ties.append(j - i + 1)
    ranks = array("d", bytes(8 * n))  # zeros
    deque(map(ranks.__setitem__, order, rank_in_order), maxlen=0)  # ranks[order[r]] = rank_in_order[r]
    return ranks, ties


def first_true(pred: Callable[[int], bool], guess: int, n: int) -> int:
    """The smallest i in [0, n) with pred(i), for pred false then true over [0, n); n if pred holds nowhere.

    A galloping search from `guess` (Bentley & Yao 1976): O(log d) evaluations when the answer is d away,
    so a good guess costs a few.
    """
    if n <= 0:
        return 0
    guess = min(max(guess, 0), n - 1)
    if pred(guess):
        lo, hi, step = guess - 1, guess, 1  # pred(hi) holds; walk down to a lo where it fails
        while lo >= 0 and pred(lo):
            hi, lo, step = lo, lo - 2 * step, 2 * step
        lo = max(lo, -1)
    else:
        lo, hi, step = guess, guess + 1, 1  # pred(lo) fails; walk up to a hi where it holds
        while hi < n and not pred(hi):
            lo, hi, step = hi, hi + 2 * step, 2 * step
        hi = min(hi, n)
    while hi - lo > 1:  # pred(lo) fails (or lo = -1), pred(hi) holds (or hi = n)
        mid = (lo + hi) // 2
        if pred(mid):
            hi = mid
        else:
            lo = mid
    return hi


def percentile_sorted(xs: Sequence[float], q: float) -> float:
    """The q-quantile (0 <= q <= 1) of already sorted values by linear interpolation between closest ranks.

    Hyndman & Fan (1996) definition 7, the default of numpy.percentile, R's quantile() and Excel's
    PERCENTILE.INC: position h = (n - 1) q (0-based),
    value x[floor h] + (h - floor h)(x[floor h + 1] - x[floor h]).
    """
    n = len(xs)
    if n == 0:
        raise ValueError("percentile of no values")
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"quantile level must be in [0, 1], got {q}")
    h = (n - 1) * q
    lo = math.floor(h)
    if lo >= n - 1:
        return float(xs[n - 1])
    frac = h - lo
    return xs[lo] + frac * (xs[lo + 1] - xs[lo]) if frac else float(xs[lo])
