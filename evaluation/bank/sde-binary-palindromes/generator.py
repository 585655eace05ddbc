"""Hidden-test generator for sde-binary-palindromes (trusted bank code, plain stdlib).

Expected values come from the direct construction below; small inputs are cross-checked against
a brute-force scan at generation time.
"""

from __future__ import annotations

from bisect import bisect_right

LIMIT = 2**32 - 1  # codes are unsigned 32-bit integers
FUNCTIONAL_MAX = 1 << 17  # keeps the slow reference well under a second per functional case


def _digits(value, base):
    out = []
    while value:
        value, rest = divmod(value, base)
        out.append(rest)
    return out


def _valid(value, base, min_bits):
    bits = _digits(value, 2)
    if value < 1 or len(bits) < min_bits or bits != bits[::-1]:
        return False
    label = _digits(value, base)
    return label == label[::-1]


def _codes_up_to(limit, base, min_bits):
    codes = []
    length = 1
    while (1 << (length - 1)) <= limit:
        half = (length + 1) // 2
        low = length - half
        for prefix in range(1 << (half - 1), 1 << half):
            head = format(prefix, "b")
            tail = head[::-1][length % 2:] if low else ""
            value = int(head + tail, 2)
            if value > limit:
                break
            if length >= min_bits:
                label = _digits(value, base)
                if label == label[::-1]:
                    codes.append(value)
        length += 1
    return codes


def _case(name, category, queries, codes, kind="functional", visible=False):
    return {
        "name": name,
        "kind": kind,
        "category": category,
        "args": [queries],
        "kwargs": {},
        "expected": [bisect_right(codes, n) for n in queries],
        "visible": visible,
    }


def generate(params, names, rng):
    base = params["label_base"]
    min_bits = params["min_bits"]
    codes = _codes_up_to(LIMIT, base, min_bits)
    small = [v for v in range(1, 4097) if _valid(v, base, min_bits)]
    if small != [c for c in codes if c <= 4096]:
        raise AssertionError("direct construction disagrees with the brute-force scan")
    small_codes = [c for c in codes if c <= FUNCTIONAL_MAX]

    def around(values, upper):
        out = set()
        for v in values:
            out.update(x for x in (v - 1, v, v + 1) if 0 <= x <= upper)
        return sorted(out)

    example = sorted(rng.sample(range(1, 2000), 5)) + [0, 9]
    visible_two = [rng.randrange(0, 600) for _ in range(4)] + [rng.randrange(4000, 20000)]
    cases = [
        _case("example_from_task_data", "example", example, codes, visible=True),
        _case("example_small_ceilings", "example", list(range(0, 12)), codes, visible=True),
        _case("example_unsorted", "example", visible_two, codes, visible=True),
        _case("edge_empty_batch", "edge", [], codes),
        _case("edge_zero", "edge", [0], codes),
        _case("edge_one", "edge", [1], codes),
        _case("edge_first_hundred", "edge", list(range(0, 100)), codes),
        _case("edge_powers_of_two", "edge", around([1 << k for k in range(18)], FUNCTIONAL_MAX), codes),
        _case("edge_around_valid_codes", "edge", around(small_codes[:40], FUNCTIONAL_MAX), codes),
        _case("edge_repeated_ceiling", "edge", [small_codes[-1]] * 3 + [0, small_codes[-1]], codes),
    ]
    for index in range(8):
        size = rng.randint(3, 40)
        queries = [rng.randint(0, FUNCTIONAL_MAX) for _ in range(size)]
        cases.append(_case(f"random_{index + 1}", "random", queries, codes))
    descending = sorted((rng.randint(0, FUNCTIONAL_MAX) for _ in range(30)), reverse=True)
    cases.append(_case("random_descending", "random", descending, codes))

    size = params["batch_size"]
    uniform = [rng.randint(1, LIMIT) for _ in range(size - 1)] + [LIMIT]
    rng.shuffle(uniform)
    cases.append(_case("scale_uniform_batch", "scale", uniform, codes, kind="performance"))
    edges = around(codes[-(size // 6):], LIMIT) + around([(1 << k) for k in range(33)], LIMIT)
    edges += [rng.randint(LIMIT // 2, LIMIT) for _ in range(max(0, size - len(edges)))]
    edges = edges[: size - 1] + [LIMIT]
    rng.shuffle(edges)
    cases.append(_case("scale_boundary_batch", "scale", edges, codes, kind="performance"))
    return {
        "task_data": {
            "input": {names["queries_arg"]: example},
            "expected_output": cases[0]["expected"],
        },
        "cases": cases,
    }


def compare(expected, actual):
    if not isinstance(actual, list):
        return False, f"returned {type(actual).__name__}, expected a list of counts"
    if len(actual) != len(expected):
        return False, f"returned {len(actual)} counts for a batch of a different size"
    if any(isinstance(v, bool) or not isinstance(v, int) for v in actual):
        return False, "returned a list that contains something other than integers"
    wrong = sum(1 for e, a in zip(expected, actual) if e != a)
    if wrong:
        return False, f"{wrong} of {len(expected)} counts differ from the expected counts"
    return True, "all counts match"
