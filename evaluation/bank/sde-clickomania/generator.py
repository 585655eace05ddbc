"""Hidden-test generator for sde-clickomania (trusted bank code, plain stdlib).

Expected boards come from a candidate-heap implementation; every small board is cross-checked
against a full re-read of the board after each move.
"""

from __future__ import annotations

import heapq


def _render(cols, width, height, side):
    gap = [[] for _ in range(width - len(cols))]
    ordered = cols + gap if side == "left" else gap + cols
    return ["".join(c[y] if y < len(c) else "." for c in ordered) for y in range(height - 1, -1, -1)]


def _columns(board):
    height = len(board)
    return [[board[height - 1 - y][x] for y in range(height)] for x in range(len(board[0]))]


def _fast(board, side):
    if not board:
        return []
    height, width = len(board), len(board[0])
    cols = _columns(board)
    nxt = list(range(1, width)) + [-1]
    prv = [-1] + list(range(width - 1))
    alive = [True] * width
    heap = [(y, x) for x in range(width) for y in range(height)]
    heapq.heapify(heap)

    def recheck(x, low):
        for y in range(max(0, low), len(cols[x])):
            heapq.heappush(heap, (y, x))

    def close(x):
        alive[x] = False
        if prv[x] >= 0:
            nxt[prv[x]] = nxt[x]
            recheck(prv[x], 0)
        if nxt[x] >= 0:
            prv[nxt[x]] = prv[x]

    while heap:
        y, x = heapq.heappop(heap)
        col = cols[x]
        if not alive[x] or y >= len(col):
            continue
        right = nxt[x]
        if right >= 0 and y < len(cols[right]) and cols[right][y] == col[y]:
            del col[y], cols[right][y]
            if prv[x] >= 0:
                recheck(prv[x], y)
            recheck(x, y - 1)
            recheck(right, y - 1)
            if not cols[right]:
                close(right)
            if not col:
                close(x)
        elif y + 1 < len(col) and col[y + 1] == col[y]:
            del col[y : y + 2]
            if prv[x] >= 0:
                recheck(prv[x], y)
            recheck(x, y - 1)
            if not col:
                close(x)
    return _render([cols[x] for x in range(width) if alive[x]], width, height, side)


def _slow(board, side):
    if not board:
        return []
    height, width = len(board), len(board[0])
    cols = _columns(board)
    while True:
        move = None
        for y in range(height):
            for i, col in enumerate(cols):
                if y < len(col):
                    if i + 1 < len(cols) and y < len(cols[i + 1]) and cols[i + 1][y] == col[y]:
                        move = (i, y, True)
                    elif y + 1 < len(col) and col[y + 1] == col[y]:
                        move = (i, y, False)
                if move:
                    break
            if move:
                break
        if move is None:
            return _render(cols, width, height, side)
        i, y, horizontal = move
        if horizontal:
            del cols[i][y], cols[i + 1][y]
        else:
            del cols[i][y : y + 2]
        cols = [col for col in cols if col]


def _random_board(rng, rows, cols, letters):
    return ["".join(rng.choice(letters) for _ in range(cols)) for _ in range(rows)]


def _bedrock_board(rng, rows, cols, bedrock_rows, live, rock):
    """A pair-free bedrock layer at the bottom under a busy live layer of other colours."""
    board = []
    for top_index in range(rows):
        y = rows - 1 - top_index
        if y < bedrock_rows:
            board.append("".join(rock[(x + 2 * y) % len(rock)] for x in range(cols)))
        else:
            board.append("".join(rng.choice(live) for _ in range(cols)))
    return board


def generate(params, names, rng):
    side, palette = params["merge_side"], params["palette"]
    cases = []

    def add(name, category, board, kind="functional", visible=False):
        expected = _fast(board, side)
        if len(board) * (len(board[0]) if board else 0) <= 400 and expected != _slow(board, side):
            raise AssertionError(f"candidate heap and full re-read disagree on {name}")
        cases.append(
            {
                "name": name,
                "kind": kind,
                "category": category,
                "args": [board],
                "kwargs": {},
                "expected": expected,
                "visible": visible,
            }
        )

    a, b, c, d, e, f, g = palette[:7]
    add("example_from_task_data", "example", _random_board(rng, 5, 6, palette[:3]), visible=True)
    add("example_small_board", "example", _random_board(rng, 4, 5, palette[:3]), visible=True)
    add("edge_empty_board", "edge", [])
    add("edge_single_tile", "edge", [a])
    add("edge_single_row", "edge", [a + a + b + b + a + c + c + a])
    add("edge_single_column", "edge", [a, b, b, a, a, c, a])
    add("edge_no_pairs", "edge", [a + b + a, b + a + b, a + b + a])
    add("edge_one_colour", "edge", [a * 5] * 4)
    add("edge_odd_one_colour", "edge", [a * 3] * 3)
    add("edge_horizontal_before_vertical", "edge", [a + b, a + a])
    add("edge_middle_column_empties", "edge", [c + b + d, a + b + a])
    add("edge_chain_after_closing", "edge", [f + e + g, d + e + d, c + b + c, a + b + a])
    add("edge_first_column_empties", "edge", [a + c + d, a + b + b, d + c + a])
    add("edge_last_column_empties", "edge", [d + c + a, b + b + a, a + c + d])
    add("edge_tall_and_thin", "edge", _random_board(rng, 15, 2, palette[:2]))
    for index in range(8):
        rows, cols = rng.randint(2, 14), rng.randint(2, 14)
        letters = palette[: rng.randint(2, 4)]
        add(f"random_{index + 1}", "random", _random_board(rng, rows, cols, letters))
    add("random_medium", "random", _random_board(rng, 20, 20, palette[:3]))

    rows, cols = params["perf_rows"], params["perf_cols"]
    live, rock = palette[:3], palette[3:]
    board = _bedrock_board(rng, rows, cols, round(rows * 0.68), live, rock)
    add("scale_marathon_board", "scale", board, kind="performance")
    board = _bedrock_board(rng, rows, cols, round(rows * 0.6), live[:2], rock)
    add("scale_two_colour_marathon", "scale", board, kind="performance")

    first = cases[0]
    return {
        "task_data": {
            "input": {names["board_arg"]: first["args"][0]},
            "expected_output": first["expected"],
        },
        "cases": cases,
    }


def compare(expected, actual):
    if not isinstance(actual, list) or not all(isinstance(row, str) for row in actual):
        return False, "must return a list of row strings"
    if len(actual) != len(expected) or any(len(a) != len(e) for a, e in zip(actual, expected)):
        return False, "returned a board of a different shape than the input"
    wrong = sum(1 for a, e in zip(actual, expected) for x, y in zip(a, e) if x != y)
    if wrong:
        return False, f"{wrong} cells differ from the expected final board"
    return True, "final board matches"
