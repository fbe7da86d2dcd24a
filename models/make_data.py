#!/usr/bin/env python3
"""Regenerates the small example data sets beside the models (standard library only, fixed seed).

Each model `name.gpm` gets `name.data.json` (training data, the layout CmdStan uses: one key per
data variable) and `name.test.json` (held-out points for `--predict`). Run from anywhere:
`python3 models/make_data.py`.
"""
import json
import math
import os
import random

HERE = os.path.dirname(os.path.abspath(__file__))


def sigmoid(z):
    return 1.0 / (1.0 + math.exp(-z))


def latent_fn(x):
    return 1.5 * math.sin(2.0 * x) + 0.5 * x


def write(name, train, test):
    for suffix, data in (("data", train), ("test", test)):
        with open(os.path.join(HERE, f"{name}.{suffix}.json"), "w") as fh:
            json.dump(data, fh, indent=None, separators=(",", ":"))
            fh.write("\n")


def r4(v):
    return round(v, 4)


def split(rows, n_train):
    return rows[:n_train], rows[n_train:]


def two_moons(rng, n):
    """A 2-D classification problem with a curved boundary."""
    xs, ys = [], []
    for k in range(n):
        label = 1 if k % 2 == 0 else -1
        t = rng.uniform(0, math.pi)
        if label == 1:
            x = [math.cos(t), math.sin(t) - 0.3]
        else:
            x = [1.0 - math.cos(t), 0.3 - math.sin(t)]
        x = [r4(v + rng.gauss(0, 0.25)) for v in x]
        xs.append(x)
        ys.append(label)
    return xs, ys


def regression_1d(rng, n, noise):
    xs = sorted(rng.uniform(-3, 3) for _ in range(n))
    rng.shuffle(xs)
    ys = [latent_fn(x) + noise() for x in xs]
    return [r4(x) for x in xs], [r4(y) for y in ys]


def main():
    rng = random.Random(20261122)
    n_train, n_test = 60, 40

    # Binary classification (labels ±1): GP classifier and Bayesian SVM.
    xs, ys = two_moons(rng, n_train + n_test)
    for name in ("gp_classification", "bayesian_svm"):
        write(
            name,
            {"N": n_train, "D": 2, "X": xs[:n_train], "y": ys[:n_train]},
            {"N": n_test, "D": 2, "X": xs[n_train:], "y": ys[n_train:]},
        )

    # Logistic regression (labels 0/1) with known weights.
    w_true, b_true = [1.5, -2.0, 0.5], -0.5
    X = [[r4(rng.gauss(0, 1)) for _ in w_true] for _ in range(150)]
    y = [1 if rng.random() < sigmoid(sum(a * b for a, b in zip(x, w_true)) + b_true) else 0 for x in X]
    write(
        "logistic_regression",
        {"N": 100, "D": 3, "X": X[:100], "y": y[:100]},
        {"N": 50, "D": 3, "X": X[100:], "y": y[100:]},
    )

    # Linear regression with known weights and noise sd 0.5.
    w_true, b_true = [0.8, -1.2], 2.0
    X = [[r4(rng.gauss(0, 1)) for _ in w_true] for _ in range(80)]
    y = [r4(sum(a * b for a, b in zip(x, w_true)) + b_true + rng.gauss(0, 0.5)) for x in X]
    write(
        "linear_regression",
        {"N": 50, "D": 2, "X": X[:50], "y": y[:50]},
        {"N": 30, "D": 2, "X": X[50:], "y": y[50:]},
    )

    # Robust regression with heavy-tailed noise (Student-t data with a few gross outliers).
    def t_noise():
        g = rng.gammavariate(2.0, 0.5)  # ν = 4: precision ~ Gamma(ν/2, rate ν/2)
        return rng.gauss(0, 0.3 / math.sqrt(g))

    for name, noise in (
        ("student_t_regression", t_noise),
        ("laplace_regression", lambda: (1 if rng.random() < 0.5 else -1) * rng.expovariate(1 / 0.3)),
        ("matern32_regression", lambda: rng.gauss(0, 0.3)),
    ):
        x, y = regression_1d(rng, n_train + n_test, noise)
        if name == "student_t_regression":
            for k in (3, 17, 41):
                y[k] = r4(y[k] + 4.0)
        write(name, {"N": n_train, "x": x[:n_train], "y": y[:n_train]},
              {"N": n_test, "x": x[n_train:], "y": y[n_train:]})
        if name == "student_t_regression":
            # The same data, with priors on every hyperparameter (sampled within Gibbs).
            write("robust_gp_hyperpriors", {"N": n_train, "x": x[:n_train], "y": y[:n_train]},
                  {"N": n_test, "x": x[n_train:], "y": y[n_train:]})

    # Heteroscedastic regression: noise grows with |x|.
    x = [r4(rng.uniform(-3, 3)) for _ in range(n_train + n_test)]
    y = [r4(latent_fn(v) + rng.gauss(0, 0.1 + 0.25 * abs(v))) for v in x]
    write("heteroscedastic_gp", {"N": n_train, "x": x[:n_train], "y": y[:n_train]},
          {"N": n_test, "x": x[n_train:], "y": y[n_train:]})

    # Counts: Poisson with rate λσ(f), λ = 10, and negative binomial with r = 3.
    def poisson(lam):
        # Knuth's method is fine for λ ≤ 30.
        limit, k, p = math.exp(-lam), 0, 1.0
        while True:
            p *= rng.random()
            if p <= limit:
                return k
            k += 1

    x = [r4(rng.uniform(-3, 3)) for _ in range(n_train + n_test)]
    y = [poisson(10 * sigmoid(latent_fn(v))) for v in x]
    write("poisson_gp", {"N": n_train, "x": x[:n_train], "y": y[:n_train]},
          {"N": n_test, "x": x[n_train:], "y": y[n_train:]})
    x = [r4(rng.uniform(-3, 3)) for _ in range(n_train + n_test)]
    y = []
    for v in x:
        p = sigmoid(latent_fn(v))  # success probability per trial; r = 3 failures
        lam = rng.gammavariate(3.0, p / (1 - p))
        y.append(poisson(lam))
    write("negbin_gp", {"N": n_train, "x": x[:n_train], "y": y[:n_train]},
          {"N": n_test, "x": x[n_train:], "y": y[n_train:]})

    # Three classes in 2-D: Gaussian blobs.
    centres = [(-1.5, 0.0), (1.5, 0.0), (0.0, 2.0)]
    X, y = [], []
    for k in range(n_train + n_test):
        c = k % 3
        X.append([r4(centres[c][0] + rng.gauss(0, 0.8)), r4(centres[c][1] + rng.gauss(0, 0.8))])
        y.append(c + 1)
    write("multiclass_gp", {"N": n_train, "D": 2, "C": 3, "X": X[:n_train], "y": y[:n_train]},
          {"N": n_test, "D": 2, "C": 3, "X": X[n_train:], "y": y[n_train:]})

    # A larger classification set for the sparse GP / SVI example (its own stream, so that the
    # sets above stay as they were).
    rng2 = random.Random(20261123)
    xs, ys = two_moons(rng2, 5000)
    write("sparse_gp_classification", {"N": 4000, "D": 2, "X": xs[:4000], "y": ys[:4000]},
          {"N": 1000, "D": 2, "X": xs[4000:], "y": ys[4000:]})

    # Heteroscedastic Student-t: noise scale grows with |x|, ν = 4, and two gross outliers
    # (its own stream, so the sets above stay as they were).
    rng3 = random.Random(20261124)
    x = [r4(rng3.uniform(-3, 3)) for _ in range(n_train + n_test)]
    y = []
    for v in x:
        prec = rng3.gammavariate(2.0, 0.5)  # ν = 4
        y.append(r4(latent_fn(v) + rng3.gauss(0, (0.1 + 0.25 * abs(v)) / math.sqrt(prec))))
    for k in (5, 29):
        y[k] = r4(y[k] - 3.0)
    write("heteroscedastic_student_t", {"N": n_train, "x": x[:n_train], "y": y[:n_train]},
          {"N": n_test, "x": x[n_train:], "y": y[n_train:]})

    # Probit GP classification, labels 0/1 (its own stream).
    rng4 = random.Random(20261125)
    x = [r4(rng4.uniform(-3, 3)) for _ in range(n_train + n_test)]
    y = [1 if rng4.random() < 0.5 * math.erfc(-latent_fn(v) / math.sqrt(2)) else 0 for v in x]
    write("probit_gp", {"N": n_train, "x": x[:n_train], "y": y[:n_train]},
          {"N": n_test, "x": x[n_train:], "y": y[n_train:]})

    # Poisson GP with a log link, an exposure and an intercept (its own stream).
    rng5 = random.Random(20261126)
    x = [r4(rng5.uniform(-3, 3)) for _ in range(n_train + n_test)]
    e = [r4(rng5.uniform(0.5, 2.0)) for _ in x]
    y = []
    for v, ei in zip(x, e):
        limit, k, prod = math.exp(-ei * math.exp(0.4 * latent_fn(v) + 0.5)), 0, 1.0
        while True:
            prod *= rng5.random()
            if prod <= limit:
                break
            k += 1
        y.append(k)
    write("poisson_log_gp", {"N": n_train, "x": x[:n_train], "E": e[:n_train], "y": y[:n_train]},
          {"N": n_test, "x": x[n_train:], "E": e[n_train:], "y": y[n_train:]})

    # Skew-normal noise around a GP (shape 4, scale 0.5): a likelihood no rule augments.
    rng6 = random.Random(20261127)
    x = [r4(rng6.uniform(-3, 3)) for _ in range(n_train + n_test)]
    y = []
    for v in x:
        u0, u1 = rng6.gauss(0, 1), rng6.gauss(0, 1)
        delta = 4.0 / math.sqrt(17.0)
        z = delta * abs(u0) + math.sqrt(1 - delta * delta) * u1
        y.append(r4(latent_fn(v) + 0.5 * z))
    write("skew_normal_gp", {"N": n_train, "x": x[:n_train], "y": y[:n_train]},
          {"N": n_test, "x": x[n_train:], "y": y[n_train:]})

    # Gumbel (extreme-value) noise around a GP, scale 0.4: a likelihood no rule augments.
    rng7 = random.Random(20261128)
    x = [r4(rng7.uniform(-3, 3)) for _ in range(n_train + n_test)]
    y = [r4(latent_fn(v) - 0.4 * math.log(-math.log(rng7.random()))) for v in x]
    write("gumbel_gp", {"N": n_train, "x": x[:n_train], "y": y[:n_train]},
          {"N": n_test, "x": x[n_train:], "y": y[n_train:]})

    # Hierarchical logistic regression with random intercepts and slopes by group (its own
    # stream): y ~ bernoulli_logit(a + x·(b + v[g]) + u[g]).
    rng8 = random.Random(20261129)
    groups = 8
    u = [rng8.gauss(0, 0.8) for _ in range(groups)]
    v = [rng8.gauss(0, 0.6) for _ in range(groups)]
    g = [1 + k % groups for k in range(n_train * 2 + n_test * 2)]
    x = [[r4(rng8.gauss(0, 1))] for _ in g]
    y = [1 if rng8.random() < sigmoid(-0.3 + xi[0] * (0.8 + v[gi - 1]) + u[gi - 1]) else 0
         for xi, gi in zip(x, g)]
    n1, n2 = n_train * 2, n_test * 2
    write("hierarchical_logistic",
          {"N": n1, "G": groups, "g": g[:n1], "X": x[:n1], "y": y[:n1]},
          {"N": n2, "G": groups, "g": g[n1:], "X": x[n1:], "y": y[n1:]})

    # GP regression with 10 % gross outliers in the training data (every tenth point moved by
    # 4 to 8, up or down; its own stream); the test points are clean.
    rng9 = random.Random(20261130)
    x = [r4(rng9.uniform(-3, 3)) for _ in range(n_train + n_test)]
    y = [latent_fn(v) + 0.2 * rng9.gauss(0, 1) for v in x]
    for k in range(0, n_train, 10):
        y[k] += rng9.choice([-1, 1]) * rng9.uniform(4, 8)
    y = [r4(v) for v in y]
    write("robust_gp_regression", {"N": n_train, "x": x[:n_train], "y": y[:n_train]},
          {"N": n_test, "x": x[n_train:], "y": y[n_train:]})

    # The two-moons classifier with 10 % of its training labels flipped (own stream); clean
    # test labels.
    rng10 = random.Random(20261201)
    xs, ys = two_moons(rng10, n_train + n_test)
    for k in rng10.sample(range(n_train), n_train // 10):
        ys[k] = -ys[k]
    write("robust_gp_classification",
          {"N": n_train, "D": 2, "X": xs[:n_train], "y": ys[:n_train]},
          {"N": n_test, "D": 2, "X": xs[n_train:], "y": ys[n_train:]})


if __name__ == "__main__":
    main()
