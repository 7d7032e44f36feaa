"""A small CART decision tree (Gini, depth 2-3) on integer fixed-point features, exported as JSON
thresholds and as a C function of plain if/else.

Features are quantised before training (`quantize`), and every threshold is an integer, so the Python
tree, the JSON and the C function decide every input identically: there is no float in the decision.
Pure Python on purpose: the training sets are hundreds of rows and the board needs no scikit-learn.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

TREE_SCHEMA = 1
# name, fixed-point scale, unit of the scaled integer.
FEATURES: tuple[tuple[str, int, str], ...] = (
    ("cci_congestion", 1000, "milli stall cycles per CCI read"),
    ("memory_access", 1_000_000, "bus accesses per million cycles"),
    ("load", 1, "% busy of the managed cluster"),
    ("this_khz", 1, "kHz of the cluster running the task"),
    ("other_khz", 1, "kHz of the managed (other) cluster"),
)
FEATURE_NAMES = tuple(f[0] for f in FEATURES)


def quantize(row: dict[str, float]) -> tuple[int, ...]:
    """Feature values -> the integers the C function takes (floor of value x scale)."""
    return tuple(int(row[name] * scale // 1) for name, scale, _ in FEATURES)


@dataclass(frozen=True)
class Node:
    feature: int | None  # index into FEATURES; None for a leaf
    threshold: int  # go left when x[feature] <= threshold
    left: Node | None
    right: Node | None
    label: int  # majority class (leaf), 1 = slow
    counts: tuple[int, int]  # training rows (not slow, slow)

    def kids(self) -> tuple[Node, Node]:
        """An inner node's (left, right): both are set wherever `feature` is."""
        assert self.left is not None and self.right is not None, "a leaf has no children"
        return self.left, self.right

    def predict(self, x: Sequence[int]) -> int:
        node = self
        while node.feature is not None:
            left, right = node.kids()
            node = left if x[node.feature] <= node.threshold else right
        return node.label

    def depth(self) -> int:
        return 0 if self.feature is None else 1 + max(kid.depth() for kid in self.kids())


def _gini(n0: int, n1: int) -> float:
    n = n0 + n1
    return 0.0 if n == 0 else 1.0 - (n0 / n) ** 2 - (n1 / n) ** 2


def _leaf(y: Sequence[int]) -> Node:
    n1 = sum(y)
    n0 = len(y) - n1
    return Node(None, 0, None, None, int(n1 > n0), (n0, n1))


def fit(
    X: Sequence[Sequence[int]],
    y: Sequence[int],
    *,
    max_depth: int = 3,
    min_leaf: int = 2,
    features: Sequence[int] | None = None,
) -> Node:
    """Greedy CART: at each node the split (feature, integer threshold) with the lowest weighted Gini."""
    use = list(range(len(FEATURES))) if features is None else list(features)
    return _grow(list(X), list(y), max_depth, min_leaf, use)


def _grow(X: list, y: list, depth: int, min_leaf: int, use: list[int]) -> Node:
    leaf = _leaf(y)
    if depth == 0 or leaf.counts[0] == 0 or leaf.counts[1] == 0 or len(y) < 2 * min_leaf:
        return leaf
    best = None
    parent = _gini(*leaf.counts) * len(y)
    for f in use:
        order = sorted(range(len(y)), key=lambda i: X[i][f])
        n0 = n1 = 0
        total1 = leaf.counts[1]
        for k in range(len(order) - 1):
            i = order[k]
            n1 += y[i]
            n0 += 1 - y[i]
            a, b = X[i][f], X[order[k + 1]][f]
            if a == b or k + 1 < min_leaf or len(order) - k - 1 < min_leaf:
                continue
            r1 = total1 - n1
            r0 = len(y) - k - 1 - r1
            score = _gini(n0, n1) * (k + 1) + _gini(r0, r1) * (len(y) - k - 1)
            if score < parent - 1e-12 and (best is None or score < best[0]):
                best = (score, f, (a + b) // 2)
    if best is None:
        return leaf
    _, f, thr = best
    li = [i for i in range(len(y)) if X[i][f] <= thr]
    ri = [i for i in range(len(y)) if X[i][f] > thr]
    left = _grow([X[i] for i in li], [y[i] for i in li], depth - 1, min_leaf, use)
    right = _grow([X[i] for i in ri], [y[i] for i in ri], depth - 1, min_leaf, use)
    if left.feature is None and right.feature is None and left.label == right.label:
        return leaf  # a split that decides nothing
    return Node(f, thr, left, right, leaf.label, leaf.counts)


def confusion(tree: Node, X: Sequence[Sequence[int]], y: Sequence[int]) -> dict[str, int]:
    c = {"true_slow": 0, "false_slow": 0, "true_not_slow": 0, "false_not_slow": 0}
    for x, t in zip(X, y, strict=True):
        p = tree.predict(x)
        key = ("true_" if p == t else "false_") + ("slow" if p else "not_slow")
        c[key] += 1
    return c


def accuracy(c: dict[str, int]) -> float | None:
    n = sum(c.values())
    return None if n == 0 else (c["true_slow"] + c["true_not_slow"]) / n


def cross_validate(
    X: Sequence[Sequence[int]],
    y: Sequence[int],
    groups: Sequence[object],
    *,
    k: int = 5,
    seed: int = 1,
    **fit_kw,
) -> dict:
    """k-fold over groups (a sweep cell's runs stay together, so no cell is both trained and tested on)."""
    keys = sorted(set(groups), key=repr)
    random.Random(seed).shuffle(keys)
    fold_of = {g: i % k for i, g in enumerate(keys)}
    total = {"true_slow": 0, "false_slow": 0, "true_not_slow": 0, "false_not_slow": 0}
    folds = []
    for f in range(k):
        tr = [i for i, g in enumerate(groups) if fold_of[g] != f]
        te = [i for i, g in enumerate(groups) if fold_of[g] == f]
        if not tr or not te:
            continue
        t = fit([X[i] for i in tr], [y[i] for i in tr], **fit_kw)
        c = confusion(t, [X[i] for i in te], [y[i] for i in te])
        folds.append(accuracy(c))
        for key in total:
            total[key] += c[key]
    return {"k": len(folds), "accuracy": accuracy(total), "fold_accuracy": folds, "confusion": total}


# ---- export ----


def to_json(tree: Node) -> dict:
    def node(n: Node) -> dict:
        if n.feature is None:
            return {"leaf": "slow" if n.label else "not_slow", "train_counts": list(n.counts)}
        name, scale, unit = FEATURES[n.feature]
        return {
            "feature": name,
            "threshold": n.threshold,
            "threshold_value": n.threshold / scale,
            "unit": unit,
            "le": node(n.kids()[0]),
            "gt": node(n.kids()[1]),
        }

    return {
        "schema": TREE_SCHEMA,
        "features": [{"name": n, "scale": s, "unit": u} for n, s, u in FEATURES],
        "tree": node(tree),
    }


def from_json(doc: dict) -> Node:
    if doc.get("schema") != TREE_SCHEMA:
        raise ValueError(f"tree schema {doc.get('schema')!r}, expected {TREE_SCHEMA}")

    def node(d: dict) -> Node:
        if "leaf" in d:
            lab = int(d["leaf"] == "slow")
            return Node(None, 0, None, None, lab, tuple(d.get("train_counts", (0, 0))))
        return Node(
            FEATURE_NAMES.index(d["feature"]), int(d["threshold"]), node(d["le"]), node(d["gt"]), 0, (0, 0)
        )

    return node(doc["tree"])


def to_c(tree: Node, name: str = "boardlab_snoop_slow") -> str:
    """A C function (C89-compatible, no float) returning 1 when the tree says 'slow'."""
    args = ", ".join(f"long long {n}" for n in FEATURE_NAMES)
    lines = [
        "/* Generated by `boardlab governor train`: the snoop-latency decision tree of the governor study's",
        " * method. Inputs are integers in fixed point: "
        + "; ".join(f"{n} x{s} ({u})" for n, s, u in FEATURES)
        + ".",
        " * Returns 1 when the other cluster should step up (slow), 0 otherwise. */",
        f"static int {name}({args})",
        "{",
    ]

    def emit(n: Node, indent: int) -> None:
        pad = "    " * indent
        if n.feature is None:
            lines.append(f"{pad}return {n.label};")
            return
        lines.append(f"{pad}if ({FEATURE_NAMES[n.feature]} <= {n.threshold}LL) {{")
        emit(n.kids()[0], indent + 1)
        lines.append(f"{pad}}} else {{")
        emit(n.kids()[1], indent + 1)
        lines.append(f"{pad}}}")

    emit(tree, 1)
    unused = [f for i, f in enumerate(FEATURE_NAMES) if not _uses(tree, i)]
    for f in unused:
        lines.insert(5, f"    (void){f};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _uses(n: Node, i: int) -> bool:
    return n.feature is not None and (n.feature == i or any(_uses(kid, i) for kid in n.kids()))


def predict_json(doc: dict, rows: Sequence[Sequence[int]]) -> list[int]:
    """Decides from the exported JSON alone (what a board-side reader of the thresholds does)."""
    out = []
    for x in rows:
        node = doc["tree"]
        while "leaf" not in node:
            node = node["le"] if x[FEATURE_NAMES.index(node["feature"])] <= node["threshold"] else node["gt"]
        out.append(int(node["leaf"] == "slow"))
    return out
