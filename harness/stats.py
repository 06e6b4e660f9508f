"""Welch's t-test for the harnesses' reports, in the standard library alone
(no scipy: a few seeds per group need nothing more than the formulas).

welch_p(xs, ys): the two-sided p-value of the hypothesis that two groups of
runs have the same mean, without assuming equal variances:
  t = (mean x - mean y) / sqrt(s_x^2 / n_x + s_y^2 / n_y)
  df = (s_x^2/n_x + s_y^2/n_y)^2 / ((s_x^2/n_x)^2 / (n_x-1) + (s_y^2/n_y)^2 / (n_y-1))
  p = P(|T_df| >= |t|) = I_{df / (df + t^2)}(df/2, 1/2)
with I the regularised incomplete beta function, evaluated by its continued
fraction (modified Lentz)."""
import math


def _beta_fraction(a, b, x):
    """The continued fraction of I_x(a, b), for x < (a + 1) / (a + b + 2)."""
    tiny, c, d = 1e-300, 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 500):
        for num in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                    -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            h *= c * d
        if abs(c * d - 1.0) < 1e-15:
            break
    return h


def betainc(a, b, x):
    """The regularised incomplete beta function I_x(a, b), 0 <= x <= 1."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_fraction(a, b, x) / a
    return 1.0 - front * _beta_fraction(b, a, 1.0 - x) / b  # the symmetry I_x(a,b) = 1 - I_{1-x}(b,a)


def t_two_sided(t, df):
    """P(|T| >= |t|) for Student's t with df degrees of freedom (df > 0, not necessarily whole)."""
    return betainc(df / 2.0, 0.5, df / (df + t * t))


def welch_p(xs, ys):
    """Welch's two-sided p-value for equal means of xs and ys; None when a
    group has fewer than 2 values or both have no spread at all."""
    nx, ny = len(xs), len(ys)
    if nx < 2 or ny < 2:
        return None
    mx, my = sum(xs) / nx, sum(ys) / ny
    vx = sum((x - mx) ** 2 for x in xs) / (nx - 1) / nx
    vy = sum((y - my) ** 2 for y in ys) / (ny - 1) / ny
    if vx + vy == 0.0:
        return None
    t = (mx - my) / math.sqrt(vx + vy)
    df = (vx + vy) ** 2 / (vx ** 2 / (nx - 1) + vy ** 2 / (ny - 1))
    return t_two_sided(t, df)


def t_critical(df, level=0.95):
    """The t with P(|T_df| >= t) = 1 - level: the half-width of a `level` interval in standard errors
    (12.706 at 1 degree of freedom, 4.303 at 2, 1.960 as df grows), by bisection on t_two_sided."""
    lo, hi = 0.0, 1.0
    while t_two_sided(hi, df) > 1 - level:
        hi *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if t_two_sided(mid, df) > 1 - level else (lo, mid)
    return (lo + hi) / 2


class Estimate:
    """The mean of n values (seeds) and what they say of it: sd, their sample standard deviation (None
    below 2 values); half, the half-width of the 95% interval from Student's t with df = n - 1 degrees
    of freedom (None below 2 values or without spread); p, the two-sided p of a mean of 0 by the
    one-sample t-test (None below 2 values or without spread): for paired differences, the paired
    t-test."""

    def __init__(self, xs):
        self.values = list(xs)
        self.n = len(self.values)
        self.mean = sum(self.values) / self.n if self.n else float("nan")
        self.df = self.n - 1
        self.sd = self.half = self.p = None
        if self.n >= 2:
            self.sd = math.sqrt(sum((x - self.mean) * (x - self.mean) for x in self.values) / self.df)
            hi, lo = max(self.values), min(self.values)
            if hi - lo > 1e-12 * max(1.0, abs(hi), abs(lo)):  # equal values, to round-off: no spread
                se = self.sd / math.sqrt(self.n)
                self.half = t_critical(self.df) * se
                self.p = t_two_sided(self.mean / se, self.df)

    @property
    def spread(self):
        """Whether the values differ at all (two at least, not all equal)."""
        return self.half is not None

    def interval(self):
        """(lo, hi) of the 95% interval, or None."""
        return None if self.half is None else (self.mean - self.half, self.mean + self.half)
