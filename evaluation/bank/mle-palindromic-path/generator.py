"""Hidden-test generator for mle-palindromic-path (trusted bank code, plain stdlib).

Expected answers come from the pair DP; every graph small enough is cross-checked against
exhaustive chain enumeration at generation time.
"""

from __future__ import annotations

import math

OPS = ["conv", "norm", "relu", "pool", "attn", "up", "proj", "drop"]


def _forward(stage, links):
    succ = {key: set() for key in stage}
    for a, b in links:
        if a in stage and b in stage and stage[a] != stage[b]:
            if stage[a] > stage[b]:
                a, b = b, a
            succ[a].add(b)
    return succ


def _dp(stage, op, links):
    if not stage:
        return 0
    succ = _forward(stage, links)
    pred = {key: set() for key in stage}
    for a, outs in succ.items():
        for b in outs:
            pred[b].add(a)
    order = sorted(stage, key=lambda key: (stage[key], key))
    same = {}
    for key in order:
        same.setdefault(op[key], []).append(key)
    best = {key: {} for key in stage}
    answer = 1
    for u in reversed(order):
        su = succ[u]
        if not su:
            continue
        for v in same[op[u]]:
            pv = pred[v]
            if stage[v] <= stage[u] or not pv:
                continue
            length = 2 if v in su else 0
            for u2 in su:
                if u2 in pv:
                    length = max(length, 3)
                inner = best[u2]
                for v2 in pv:
                    if v2 in inner:
                        length = max(length, inner[v2] + 2)
            if length:
                best[u][v] = length
                answer = max(answer, length)
    return answer


def _enumerate(stage, op, links):
    if not stage:
        return 0
    succ = _forward(stage, links)
    best = 1
    stack = [(key, (op[key],)) for key in stage]
    while stack:
        key, ops = stack.pop()
        if len(ops) > best and ops == ops[::-1]:
            best = len(ops)
        stack.extend((nxt, ops + (op[nxt],)) for nxt in succ[key])
    return best


def _graph(rng, n, stages, ops, fanout, same_stage=0.1, dangling=0.01):
    keys = [f"L{number}" for number in rng.sample(range(100, 100 + 20 * max(n, 1)), n)]
    stage = {key: rng.randrange(stages) for key in keys}
    op = {key: rng.choice(ops) for key in keys}
    at_stage = {}
    for key in keys:
        at_stage.setdefault(stage[key], []).append(key)
    links = []
    for key in keys:
        for _ in range(fanout):
            target = stage[key] if rng.random() < same_stage else stage[key] + rng.choice((1, 1, 2))
            pool = at_stage.get(target)
            if pool:
                other = rng.choice(pool)
                if other != key:
                    links.append([key, other] if rng.random() < 0.5 else [other, key])
        if rng.random() < dangling:
            links.append([key, f"X{rng.randrange(10_000)}"])
    if links:
        links += [list(reversed(rng.choice(links))) for _ in range(max(1, len(links) // 50))]
    rng.shuffle(links)
    return stage, op, links


def generate(params, names, rng):
    id_f, op_f, stage_f = names["id_field"], names["op_field"], names["stage_field"]

    def layers(stage, op):
        return [{id_f: key, op_f: op[key], stage_f: stage[key]} for key in stage]

    cases = []

    def add(name, category, graph, kind="functional", visible=False):
        stage, op, links = graph
        expected = _dp(stage, op, links)
        if len(stage) <= 40 and expected != _enumerate(stage, op, links):
            raise AssertionError(f"pair DP and enumeration disagree on {name}")
        cases.append(
            {
                "name": name,
                "kind": kind,
                "category": category,
                "args": [layers(stage, op), links],
                "kwargs": {},
                "expected": expected,
                "visible": visible,
            }
        )

    def manual(spec, links):
        stage = {key: s for key, _, s in spec}
        op = {key: o for key, o, _ in spec}
        return stage, op, links

    add("example_from_task_data", "example", _graph(rng, 9, 5, OPS[:2], 2), visible=True)
    add("example_three_ops", "example", _graph(rng, 12, 6, OPS[:3], 2), visible=True)
    add("edge_empty_graph", "edge", ({}, {}, []))
    add("edge_no_links", "edge", manual([("a", "conv", 0), ("b", "conv", 1)], []))
    add(
        "edge_same_stage_links_only",
        "edge",
        manual([("a", "conv", 2), ("b", "conv", 2), ("c", "conv", 2)], [["a", "b"], ["c", "b"]]),
    )
    add(
        "edge_links_to_pruned_layers",
        "edge",
        manual([("a", "norm", 0), ("b", "norm", 3)], [["a", "ghost"], ["ghost", "b"], ["b", "a"]]),
    )
    add(
        "edge_backwards_written_links",
        "edge",
        manual(
            [("p", "conv", 4), ("q", "pool", 2), ("r", "conv", 0), ("s", "conv", 6)],
            [["p", "q"], ["q", "r"], ["s", "p"], ["p", "q"]],
        ),
    )
    chain = [(f"c{i}", "relu", 10 * i) for i in range(9)]
    add("edge_uniform_chain", "edge", manual(chain, [[f"c{i + 1}", f"c{i}"] for i in range(8)]))
    add("edge_dense_small", "edge", _graph(rng, 14, 4, OPS[:2], 4, same_stage=0.3))
    add("edge_single_op", "edge", _graph(rng, 12, 6, OPS[:1], 2))
    add("edge_all_distinct_ops", "edge", _graph(rng, 8, 8, OPS, 2))
    for index in range(10):
        n = rng.randint(4, 16)
        graph = _graph(rng, n, rng.randint(2, 8), OPS[: rng.randint(2, 4)], rng.randint(1, 3))
        add(f"random_{index + 1}", "random", graph)
    add("random_medium", "random", _graph(rng, 40, 12, OPS[:3], 2))

    ops = rng.sample(OPS, params["op_count"])
    n = round(960 * math.sqrt(params["op_count"] / 3))
    stages = params["stage_count"]
    add("scale_wide_graph", "scale", _graph(rng, n, stages, ops, 3), kind="performance")
    add("scale_deep_graph", "scale", _graph(rng, n, stages * 2, ops, 3), kind="performance")

    first = cases[0]
    return {
        "task_data": {
            "input": {names["nodes_arg"]: first["args"][0], names["edges_arg"]: first["args"][1]},
            "expected_output": first["expected"],
        },
        "cases": cases,
    }


def compare(expected, actual):
    if isinstance(actual, bool) or not isinstance(actual, int):
        return False, f"returned {type(actual).__name__}, expected an integer length"
    if actual != expected:
        return False, f"returned {actual}, which is not the expected length"
    return True, "length matches"
