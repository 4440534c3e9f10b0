"""Tests of a paired difference over seeds, and a mean ± std as printed: what the experiments' summaries share
(numpy and math only: scipy is a test-only dependency)."""
import functools
import math

import numpy as np


def t_two_sided_p(t, dof):
    """P(|T| >= |t|) for Student's t with an integer number of degrees of freedom: the finite series of Abramowitz and
    Stegun 26.7.3 (odd dof) and 26.7.4 (even dof) in theta = atan(|t| / sqrt(dof))."""
    theta = math.atan(abs(t) / math.sqrt(dof))
    cos_sq, term, series = math.cos(theta) ** 2, 1.0, 0.0
    if dof % 2:
        for j in range(1, (dof - 1) // 2 + 1):  # empty for dof = 1 (Cauchy)
            series += term
            term *= 2 * j / (2 * j + 1) * cos_sq
        inside = 2 / math.pi * (theta + math.sin(theta) * math.cos(theta) * series)
    else:
        for j in range(1, dof // 2 + 1):
            series += term
            term *= (2 * j - 1) / (2 * j) * cos_sq
        inside = math.sin(theta) * series
    return min(1.0, max(0.0, 1.0 - inside))

def paired_t_test(differences):
    """(t, two-sided p) of H0: the mean paired difference is 0. Differences all equal: p = 0 unless they are 0."""
    differences = np.asarray(differences, float)
    mean, spread = differences.mean(), differences.std(ddof=1)
    if spread == 0:
        return (math.copysign(math.inf, mean), 0.0) if mean != 0 else (0.0, 1.0)
    t = mean / (spread / math.sqrt(len(differences)))
    return t, t_two_sided_p(t, len(differences) - 1)

def sign_test_p(differences):
    """Exact two-sided sign test: ties dropped, twice the binomial(n, 1/2) tail of the rarer sign, at most 1. With 5
    seeds it cannot go below 2 / 32 = 0.0625, so it is printed beside the t-test, not used as the decision."""
    differences = np.asarray(differences, float)
    above, below = int((differences > 0).sum()), int((differences < 0).sum())
    untied = above + below
    tail = sum(math.comb(untied, k) for k in range(min(above, below) + 1))
    return min(1.0, 2 * tail / 2 ** untied) if untied else 1.0

def sign_test_one_sided_p(differences):
    """Exact one-sided sign test of H0 (a difference is as likely below 0 as above) against 'above 0': ties dropped,
    the binomial(n, 1/2) tail P(X >= the number above). Beside a one-sided t-test; with 3 seeds it cannot go below
    1 / 8 = 0.125, so it never decides."""
    differences = np.asarray(differences, float)
    above, untied = int((differences > 0).sum()), int((differences != 0).sum())
    return sum(math.comb(untied, k) for k in range(above, untied + 1)) / 2 ** untied

def as_printed(values, fmt):  # at the precision printed ('.1f': 1 decimal), so a verdict judges what the table
    # shows: a difference that prints as 0 is a tie, not the paper's way (nor float noise); + 0.0 prints -0.0 as 0.0
    return np.round(values, int(fmt[1:-1])) + 0.0 if fmt.endswith('f') else values

def mean_std(values, fmt='.2f'):
    values = np.asarray(values, float)
    return f"{as_printed(values.mean(), fmt):{fmt}} ± {values.std(ddof=1) if len(values) > 1 else 0:{fmt}}"

def t_one_sided_quantile(alpha, dof):
    """t with P(T >= t) = alpha (0 < alpha < 1/2) for Student's t with dof degrees of freedom: bisection on the
    series above."""
    low, high = 0.0, 1e6
    for _ in range(200):
        middle = (low + high) / 2
        low, high = (middle, high) if t_two_sided_p(middle, dof) / 2 > alpha else (low, middle)
    return (low + high) / 2

def paired_t_power(effect, sd, n, alpha=0.05):
    """Power of the one-sided paired t-test at level alpha over n pairs when the true mean difference is `effect`
    and its std `sd`: P(T' >= t_alpha) for T' noncentral t with n - 1 dof and noncentrality effect / sd * sqrt(n),
    as E over s = sqrt(chi2_dof / dof) of P(Z >= t_alpha s - noncentrality) (trapezoid rule in s)."""
    dof, shift = n - 1, effect / sd * math.sqrt(n)
    s = np.linspace(0.0, 12.0, 20001)
    density = (2 * (dof / 2) ** (dof / 2) / math.gamma(dof / 2)) * np.power(s, dof - 1) * np.exp(-dof * s ** 2 / 2)
    critical = t_one_sided_quantile(alpha, dof)
    weights = density * np.array([0.5 * math.erfc((critical * x - shift) / math.sqrt(2)) for x in s])
    return float(((weights[1:] + weights[:-1]) / 2 * np.diff(s)).sum())

@functools.lru_cache(maxsize=None)
def detectable_in_sds(n, alpha=0.05, power=0.8):
    """The minimum detectable effect in units of the paired sd (bisection on paired_t_power): the power depends on
    the effect only through effect / sd, so one bisection serves every sd."""
    low, high = 0.0, 50.0
    for _ in range(40):
        middle = (low + high) / 2
        low, high = (middle, high) if paired_t_power(middle, 1.0, n, alpha) < power else (low, middle)
    return (low + high) / 2

def minimum_detectable_effect(sd, n, alpha=0.05, power=0.8):
    """The smallest true mean paired difference that the one-sided paired t-test at level alpha detects with the
    given power over n pairs whose differences have std sd."""
    return sd * detectable_in_sds(n, alpha, power)

def holm(p_values):
    """Holm's step-down adjustment of m p-values (one family), in the order given: sorted ascending, the k-th smallest
    (k = 0, 1, ...) times m - k, then the running maximum, at most 1. A hypothesis is rejected at level alpha when its
    adjusted p < alpha; the family-wise error stays at alpha under any dependence between the tests."""
    m, adjusted, running = len(p_values), [0.0] * len(p_values), 0.0
    for rank, i in enumerate(sorted(range(m), key=lambda i: p_values[i])):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted
