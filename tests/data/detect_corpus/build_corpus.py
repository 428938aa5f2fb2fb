# ruff: noqa: E501 -- the samples are prose; their lines are as long as the text needs.
"""Build the labelled loop-detection corpus (corpus.jsonl) deterministically.

Each sample is what a reasoning or chat model emits: a looping response (kind verbatim, near,
segment or semantic; cut at a length limit, usually mid-word, as real truncated outputs are) or
a hard negative with legitimate repetition (choruses, tables, long lists, similar code lines,
step-by-step arithmetic, questionnaires, long reasoning). Run from the repository root:

    python tests/data/detect_corpus/build_corpus.py
"""

from __future__ import annotations

import json
import random
from pathlib import Path

HERE = Path(__file__).resolve().parent
SAMPLES: list[dict[str, object]] = []


def add(sample_id: str, label: str, kind: str | None, category: str, text: str) -> None:
    SAMPLES.append(
        {"id": sample_id, "label": label, "kind": kind, "category": category, "text": text}
    )


def fill(prefix: str, body, cap: int) -> str:
    """prefix, then body() appended until `cap` characters, cut there (mid-word, like a
    length-limited generation). `body` is a string or a function of the repeat index."""
    parts = [prefix]
    size = len(prefix)
    index = 0
    while size < cap:
        piece = body(index) if callable(body) else body
        parts.append(piece)
        size += len(piece)
        index += 1
    return "".join(parts)[:cap]


# ---------------------------------------------------------------------------------------------
# Loops: verbatim
# ---------------------------------------------------------------------------------------------

PREFIX_BALLS = """<think>
Okay, so I need to figure out how many ways there are to put 5 distinct balls into 3 identical boxes such that no box is empty. Hmm, let me think.

First, since the boxes are identical, the order of the boxes doesn't matter. So this is a problem about partitioning a set of 5 elements into 3 non-empty subsets. That is exactly what the Stirling numbers of the second kind count. So the answer should be S(5, 3).

Let me recall the recurrence: S(n, k) = k * S(n-1, k) + S(n-1, k-1). I know S(n, 1) = 1 and S(n, n) = 1.

So S(3, 2) = 2 * S(2, 2) + S(2, 1) = 2 + 1 = 3.
S(4, 2) = 2 * S(3, 2) + S(3, 1) = 6 + 1 = 7.
S(4, 3) = 3 * S(3, 3) + S(3, 2) = 3 + 3 = 6.
S(5, 3) = 3 * S(4, 3) + S(4, 2) = 18 + 7 = 25.

So the answer is 25. """
LOOP_BALLS = """But wait, the problem says the balls are distinct and the boxes are identical, so I should double-check whether I need to divide by 3! somewhere.

If the boxes were distinct, the number of surjections from 5 balls onto 3 boxes would be 3! * S(5, 3) = 6 * 25 = 150. Since the boxes are identical, we divide by 3!, which gives 25 again.

So the answer is 25. """
add("v-balls", "loop", "verbatim", "paragraph", fill(PREFIX_BALLS, LOOP_BALLS, 9000))

PREFIX_TRIANGLE = """<think>
Alright, the problem: a triangle has sides 13, 14 and 15. Find its area.

I remember Heron's formula: area = sqrt(s(s-a)(s-b)(s-c)) where s is the semi-perimeter.

s = (13 + 14 + 15) / 2 = 21.

Then s - a = 8, s - b = 7, s - c = 6.

Area = sqrt(21 * 8 * 7 * 6) = sqrt(7056) = 84.

"""
LOOP_TRIANGLE = """Wait, let me verify that 84 squared is 7056. 84 * 84 = 7056. Yes.

Alternatively, I can check with the height. If the base is 14, the height h satisfies 13^2 - x^2 = 15^2 - (14 - x)^2. So 169 - x^2 = 225 - 196 + 28x - x^2, which gives 169 = 29 + 28x, so x = 5 and h = 12. Then the area is 14 * 12 / 2 = 84.

So the area is 84.

"""
add("v-triangle", "loop", "verbatim", "paragraph", fill(PREFIX_TRIANGLE, LOOP_TRIANGLE, 12000))

PREFIX_DIGITS = """Let me work out the last two digits of 7^2024.

The powers of 7 modulo 100 are: 7^1 = 7, 7^2 = 49, 7^3 = 343 -> 43, 7^4 = 43 * 7 = 301 -> 01.
So the cycle length is 4. 2024 = 4 * 506, so 7^2024 = (7^4)^506 = 1 mod 100.

Therefore the last two digits are 01. """
LOOP_DIGITS = "Therefore the last two digits are 01. "
add("v-sentence", "loop", "verbatim", "sentence", fill(PREFIX_DIGITS, LOOP_DIGITS, 6000))

add(
    "v-short-phrase",
    "loop",
    "verbatim",
    "phrase",
    fill(
        "The hook is wired to the store through `useSyncGen`, and the guard only runs when the generation id matches. In the test the guard callback is ",
        "not called ",
        4000,
    ),
)

add(
    "v-single-word",
    "loop",
    "verbatim",
    "word",
    fill(
        "Thinking about the court case, the key issue is whether the appeal was filed in time. The ",
        "court ",
        3000,
    ),
)

add(
    "v-im-end",
    "loop",
    "verbatim",
    "special-token",
    fill("The capital of Australia is Canberra.", "<|im_end|>", 2200),
)
add(
    "v-eos-deepseek",
    "loop",
    "verbatim",
    "special-token",
    fill(
        "**Final Answer**\n\\boxed{25}\n",
        "<｜end▁of▁sentence｜>",
        2000,
    ),
)
add(
    "v-think-close",
    "loop",
    "verbatim",
    "special-token",
    fill(
        "<think>\nThe user wants the log line that failed. I need to investigate this.\n",
        "I need to investigate this. Let me just paste the message.\n</think>\n",
        5000,
    ),
)
add(
    "v-im-start-cycle",
    "loop",
    "verbatim",
    "special-token",
    fill(
        'Sure! Here is the translated sentence: "Je suis content de te voir."',
        "<|im_end|>\n<|im_start|>assistant\n",
        2500,
    ),
)

PREFIX_CODE = """Here is the implementation of the training step:

```python
class Trainer:
    def __init__(self, model, optimizer):
        self.model = model
        self.optimizer = optimizer

    def step(self, batch):
        self.optimizer.zero_grad()
        loss = self.model(batch).loss
        loss.backward()
        self.optimizer.step()
"""
add(
    "v-code-line",
    "loop",
    "verbatim",
    "code",
    fill(PREFIX_CODE, "        self.optimizer.step()\n", 3500),
)

PREFIX_JSON = """```json
{
  "users": [
    {"id": 1, "name": "Alice", "email": "alice@example.com", "active": true},
    {"id": 2, "name": "Bob", "email": "bob@example.com", "active": false},
"""
add(
    "v-json-item",
    "loop",
    "verbatim",
    "code",
    fill(
        PREFIX_JSON,
        '    {"id": 3, "name": "Carol", "email": "carol@example.com", "active": true},\n',
        6000,
    ),
)

PREFIX_SQL = """To get the monthly totals you can use a window function:

```sql
SELECT
    customer_id,
    DATE_TRUNC('month', order_date) AS month,
    SUM(amount) AS total,
"""
LOOP_SQL = """    SUM(amount) OVER (PARTITION BY customer_id ORDER BY DATE_TRUNC('month', order_date)) AS running_total,
"""
add("v-sql", "loop", "verbatim", "code", fill(PREFIX_SQL, LOOP_SQL, 5000))

PREFIX_ZH = """<think>
好的，我现在需要解决这个问题：一个数列的前n项和为Sn = n^2 + 2n，求这个数列的通项公式。

首先，我知道当n ≥ 2时，an = Sn - S(n-1)。
Sn = n^2 + 2n，S(n-1) = (n-1)^2 + 2(n-1) = n^2 - 2n + 1 + 2n - 2 = n^2 - 1。
所以an = n^2 + 2n - (n^2 - 1) = 2n + 1。

当n = 1时，a1 = S1 = 1 + 2 = 3，而2*1 + 1 = 3，也符合。

"""
LOOP_ZH = """不过，我需要再检查一下n = 1的情况是否符合通项公式。a1 = S1 = 3，代入2n + 1得到3，所以符合。因此通项公式是an = 2n + 1。

"""
add("v-zh-paragraph", "loop", "verbatim", "cjk", fill(PREFIX_ZH, LOOP_ZH, 4000))

PREFIX_ZH2 = """用户问的是如何在Python中读取一个很大的CSV文件而不占用太多内存。

可以使用pandas的chunksize参数，分块读取：

for chunk in pd.read_csv("data.csv", chunksize=100000):
    process(chunk)

"""
LOOP_ZH2 = "这样就可以分块读取大文件了。"
add("v-zh-sentence", "loop", "verbatim", "cjk", fill(PREFIX_ZH2, LOOP_ZH2, 2500))

add(
    "v-zh-chars",
    "loop",
    "verbatim",
    "cjk",
    fill("这首歌的节奏是：咚、咚、哒，然后重复。我猜这首歌是", "哒咚", 1500),
)

PREFIX_JA = """まず、問題を整理します。三角形ABCにおいて、AB = 5、BC = 7、CA = 8です。角Bの大きさを求めます。

余弦定理より、cos B = (AB^2 + BC^2 - CA^2) / (2 * AB * BC) = (25 + 49 - 64) / 70 = 10 / 70 = 1/7。

"""
LOOP_JA = "したがって、cos B = 1/7 です。念のため、もう一度計算を確認します。25 + 49 - 64 = 10、2 * 5 * 7 = 70 なので、cos B = 1/7 です。\n"
add("v-ja", "loop", "verbatim", "cjk", fill(PREFIX_JA, LOOP_JA, 3000))

PREFIX_FORMAT = """<think>
The user asks: What is 323/23? Answer with a number.

323 / 23 = 14.043478...

"""
LOOP_FORMAT = """Let's go with 14.04.
Actually, I'll just say 14.
Wait, 323/23 is not exactly 14.
I will output 14.043.
The instruction says one sentence.
"""
add("v-format-dither", "loop", "verbatim", "line-cycle", fill(PREFIX_FORMAT, LOOP_FORMAT, 7000))

PREFIX_LIST = """Here are some tips for improving your sleep:

1. Keep a consistent schedule, even on weekends.
2. Avoid caffeine after 2 p.m.
3. Keep your bedroom cool, dark and quiet.
4. """
add(
    "v-list-stuck",
    "loop",
    "verbatim",
    "line-cycle",
    fill(PREFIX_LIST, "Limit screen time before bed.\n- ", 3000),
)

PREFIX_ALT = """<think>
We need the smallest positive integer n such that n^2 + n + 41 is composite.

For n = 1, 43 is prime. For n = 2, 47 is prime. This is Euler's famous polynomial, which gives primes for n = 0 to 39.

"""
LOOP_ALT = """Alternatively, maybe I should check n = 40: 40^2 + 40 + 41 = 1600 + 40 + 41 = 1681 = 41^2, which is composite.

But wait, is there a smaller n? Euler's polynomial is prime for n from 0 to 39, so no.

Hmm, so the answer is 40.

"""
add("v-alternatively", "loop", "verbatim", "wait-cycle", fill(PREFIX_ALT, LOOP_ALT, 10000))

PREFIX_PROB = """<think>
We roll two fair dice. What is the probability that the sum is 7?

There are 36 equally likely outcomes. The pairs that sum to 7 are (1,6), (2,5), (3,4), (4,3), (5,2), (6,1), which is 6 outcomes.

So the probability is 6/36 = 1/6.

"""
LOOP_PROB = """Wait, let me make sure I didn't miss any pairs. (1,6), (2,5), (3,4), (4,3), (5,2), (6,1). That's 6 pairs.

So the probability is 6/36 = 1/6.

"""
add("v-wait-pairs", "loop", "verbatim", "wait-cycle", fill(PREFIX_PROB, LOOP_PROB, 8000))

add(
    "v-markdown-rule",
    "loop",
    "verbatim",
    "phrase",
    fill(
        "## Summary\n\nThe migration finished successfully and all 14 tables were copied.\n\n",
        "---\n\n",
        1500,
    ),
)

add(
    "v-html",
    "loop",
    "verbatim",
    "code",
    fill(
        '<div class="container">\n  <div class="row">\n    <div class="col-md-6">\n      <p>Welcome to our site.</p>\n',
        "    </div>\n  </div>\n",
        3000,
    ),
)

# ---------------------------------------------------------------------------------------------
# Loops: near (counters, numbers, dates change while the rest repeats)
# ---------------------------------------------------------------------------------------------

PREFIX_STEPS = """<think>
Let me solve the recurrence a(n) = a(n-1) + 2 with a(1) = 3 and find a(50).

"""
add(
    "n-step-counter",
    "loop",
    "near",
    "counter",
    fill(
        PREFIX_STEPS,
        lambda i: (
            f"Step {i + 12}: Let me reconsider the problem from the beginning and make sure the formula is correct before moving on.\n"
        ),
        7000,
    ),
)

add(
    "n-offsets",
    "loop",
    "near",
    "counter",
    fill(
        "The file header ends at offset 220. Scanning the rest of the binary for record markers:\n\n",
        lambda i: f"{224 + 4 * i} unknown\n",
        6000,
    ),
)

add(
    "n-progress-zh",
    "loop",
    "near",
    "cjk",
    fill(
        "正在处理数据，请稍候。\n",
        lambda i: f"进度{(5 * (i + 1)) % 100:02d}%：正在读取文件并检查数据格式，请不要关闭窗口。\n",
        3000,
    ),
)

add(
    "n-progress-en",
    "loop",
    "near",
    "counter",
    fill(
        "Starting the export job.\n",
        lambda i: f"[{i % 100:3d}%] Exporting table `orders` to parquet, please wait...\n",
        5000,
    ),
)


def _date(day: int) -> str:
    import datetime

    return (datetime.date(2024, 1, 1) + datetime.timedelta(days=day)).isoformat()


add(
    "n-table-dates",
    "loop",
    "near",
    "table",
    fill(
        "Here is the schedule for the standup meetings:\n\n| Date | Time | Room | Host |\n|------|------|------|------|\n",
        lambda i: f"| {_date(i)} | 09:30 | Room 4B | Priya Sharma |\n",
        6000,
    ),
)

add(
    "n-tikz",
    "loop",
    "near",
    "code",
    fill(
        "```latex\n\\begin{tikzpicture}[node distance=1.5cm]\n\\node (n0) at (0, 0) {$x_0$};\n",
        lambda i: f"\\node (n{i + 1}) at ({i + 1}, 0) {{}};\n",
        4000,
    ),
)

add(
    "n-json-ids",
    "loop",
    "near",
    "code",
    fill(
        "```json\n[\n",
        lambda i: (
            f'  {{"id": {1000 + i}, "status": "pending", "retries": 0, "message": "waiting for upstream service"}},\n'
        ),
        7000,
    ),
)

add(
    "n-check-k",
    "loop",
    "near",
    "counter",
    fill(
        "<think>\nWe want an integer k with k^2 = 2 (mod 7). Let me check values.\n\n",
        lambda i: (
            f"Check k = {i + 3}: we need to compute k^2 mod 7 and compare it with 2, so let me recompute it carefully.\n"
        ),
        6000,
    ),
)

add(
    "n-attempt",
    "loop",
    "near",
    "counter",
    fill(
        "I will keep retrying the connection until it succeeds.\n\n",
        lambda i: (
            f"Attempt {i + 1}: connecting to the database at localhost:5432... connection refused. Retrying in 5 seconds.\n"
        ),
        6500,
    ),
)

add(
    "n-zh-day",
    "loop",
    "near",
    "cjk",
    fill(
        "以下是为期一个月的学习计划：\n",
        lambda i: f"第{i + 1}天：复习前一天的内容，然后学习新的章节，并完成课后练习题。\n",
        2500,
    ),
)

add(
    "n-log-lines",
    "loop",
    "near",
    "counter",
    fill(
        "Here is the log output from the run:\n\n```\n",
        lambda i: (
            f"2024-03-1{i % 10}T10:{i % 60:02d}:00Z INFO worker-3 heartbeat ok, queue depth 0, waiting for jobs\n"
        ),
        7000,
    ),
)

add(
    "n-percent-line",
    "loop",
    "near",
    "counter",
    fill(
        "Training log:\n",
        lambda i: (
            f"Epoch {i + 1}/100 - loss: 0.6931 - accuracy: 50.00% - val_loss: 0.6931 - val_accuracy: 50.00%\n"
        ),
        6000,
    ),
)

# ---------------------------------------------------------------------------------------------
# Loops: segment (long blocks, reordered cycles, case/space variations)
# ---------------------------------------------------------------------------------------------

LONG_BLOCK = """Let me re-derive the whole thing carefully from the start. We have a rectangle inscribed in a semicircle of radius r, with its base on the diameter. Let the half-width of the rectangle be x and its height be y. Since the top corners lie on the semicircle, we have x^2 + y^2 = r^2. The area of the rectangle is A = 2xy. To maximize A, we can maximize A^2 = 4x^2 y^2 = 4x^2 (r^2 - x^2). Let u = x^2. Then A^2 = 4u(r^2 - u), which is a downward parabola in u with its maximum at u = r^2 / 2. So x = r / sqrt(2) and y = sqrt(r^2 - r^2/2) = r / sqrt(2). The maximum area is therefore A = 2 * (r / sqrt(2)) * (r / sqrt(2)) = r^2.

Now, I should double check this using calculus directly. A(x) = 2x sqrt(r^2 - x^2). The derivative is A'(x) = 2 sqrt(r^2 - x^2) - 2x^2 / sqrt(r^2 - x^2). Setting this to zero gives r^2 - x^2 = x^2, so x^2 = r^2 / 2, which matches the previous result. The second derivative test or the endpoint values (A = 0 at x = 0 and at x = r) confirm it is a maximum.

Also, the problem might be asking for the dimensions rather than the area. The width is 2x = r sqrt(2) and the height is y = r / sqrt(2). So the rectangle is twice as wide as it is tall, which is a nice sanity check, since the width-to-height ratio 2x / y = 2.

Hmm, but the problem statement says the semicircle has radius 10, so the maximum area is 100, the width is 10 sqrt(2) and the height is 5 sqrt(2). Let me make sure I have not mixed up the radius and the diameter, because that would change the answer by a factor of 4.

"""
add(
    "s-long-block",
    "loop",
    "segment",
    "block",
    fill(
        "<think>\nThe problem: find the largest rectangle that can be inscribed in a semicircle of radius 10.\n\n",
        LONG_BLOCK,
        16000,
    ),
)

LONG_BLOCK_2 = """To summarize the approach for the migration: first, we take a full snapshot of the production database and restore it into the staging cluster, so that every subsequent step can be rehearsed against realistic data without touching live traffic. Second, we run the schema migration scripts in order, checking after each one that the row counts, the foreign-key constraints and the indexes match what we expect. Third, we run the application test suite against staging, paying special attention to the reporting queries, which are the most sensitive to changes in column types. Fourth, we schedule a maintenance window, announce it to the customers at least 48 hours in advance, and prepare a rollback plan that restores the snapshot if anything fails.

Before the actual cutover, we also need to freeze all deployments, because a deployment during the migration could write rows in the old format after the column has already been converted. The on-call engineer should monitor the replication lag and the error rate dashboards throughout the window, and should have the authority to abort the migration if the error rate exceeds 1 percent for more than five minutes.

After the cutover, we keep the old columns for two weeks before dropping them, so that a rollback is still possible. We then remove the compatibility code from the application and update the documentation.

"""
add(
    "s-plan-block",
    "loop",
    "segment",
    "block",
    fill(
        "Here is the migration plan you asked for.\n\n",
        LONG_BLOCK_2,
        14000,
    ),
)


def _reordered(rng: random.Random, lines: list[str]):
    def body(index: int) -> str:
        order = lines[:]
        rng.shuffle(order)
        return "".join(order)

    return body


CYCLE_LINES = [
    "Maybe the key is to use the pigeonhole principle on the residues modulo 5.\n",
    "If two of the numbers have the same residue, their difference is divisible by 5.\n",
    "But we need three numbers whose sum is divisible by 5, not two.\n",
    "So perhaps I should look at the possible sums of residues instead.\n",
]
add(
    "s-reordered-lines",
    "loop",
    "segment",
    "line-cycle",
    fill(
        "<think>\nProve that among any nine integers there are three whose sum is divisible by 3... no wait, the problem is about 5 integers and 3.\n\n",
        _reordered(random.Random(3), CYCLE_LINES),
        5000,
    ),
)

ZH_BLOCK = """让我重新从头分析这个问题。题目给出一个等差数列，首项为3，公差为4，要求前20项的和。根据等差数列求和公式，Sn = n * a1 + n * (n - 1) * d / 2。代入n = 20，a1 = 3，d = 4，得到S20 = 20 * 3 + 20 * 19 * 4 / 2 = 60 + 760 = 820。

不过我应该再验证一下。第20项是a20 = a1 + 19d = 3 + 76 = 79。用另一个公式Sn = n * (a1 + an) / 2，得到S20 = 20 * (3 + 79) / 2 = 20 * 41 = 820。两种方法结果一致。

但是题目中说的会不会是前21项？我再读一遍题目，题目确实说的是前20项。所以答案应该是820。可是我还是有点不放心，我需要再确认一下公式有没有用错。

"""
add(
    "s-zh-block",
    "loop",
    "segment",
    "cjk",
    fill("<think>\n好的，我来看这道题。\n\n", ZH_BLOCK, 6000),
)

CASE_VARIANT = [
    "So the function is increasing on the interval (0, 2).\n",
    "Therefore f(2) is the maximum value on [0, 2].\n",
    "f(2) = 8 - 12 + 6 = 2, so the maximum value is 2.\n",
    "Let me double-check the derivative: f'(x) = 3x^2 - 6x + 3 = 3(x - 1)^2, which is never negative.\n",
]


def _case_variants(index: int) -> str:
    # The same lines come back with small differences in capitalisation and spacing.
    lines = (
        CASE_VARIANT
        if index % 2 == 0
        else [line.lower().replace(", ", ",  ") for line in CASE_VARIANT]
    )
    return "".join(lines) + "\n"


add(
    "s-case-variants",
    "loop",
    "segment",
    "line-cycle",
    fill(
        "We need the maximum of f(x) = x^3 - 3x^2 + 3x on [0, 2].\n\n",
        _case_variants,
        5000,
    ),
)

# ---------------------------------------------------------------------------------------------
# Loops: semantic (restatement cycles in other words)
# ---------------------------------------------------------------------------------------------


def _restate(rng: random.Random, variants: list[list[str]], separator: str = "\n\n"):
    def body(index: int) -> str:
        return separator.join(rng.choice(options) for options in variants) + separator

    return body


WAIT_VARIANTS = [
    [
        "Wait, so x = 5? Let me check: 2 * 5 + 3 = 13, which matches the equation 2x + 3 = 13.",
        "Hmm, is x really 5? Plugging in, 2 * 5 + 3 = 13, so the equation 2x + 3 = 13 holds.",
        "Wait, let me verify x = 5 again: 2x + 3 with x = 5 gives 13, the right-hand side of 2x + 3 = 13.",
    ],
    [
        "But maybe I misread the equation. The problem says 2x + 3 = 13, so subtracting 3 gives 2x = 10 and x = 5.",
        "Let me re-read the problem. It says 2x + 3 = 13. Subtract 3 from both sides: 2x = 10, then divide by 2: x = 5.",
        "Actually, let me solve 2x + 3 = 13 once more: 2x = 13 - 3 = 10, hence x = 10 / 2 = 5.",
    ],
    [
        "So the answer is x = 5.",
        "Therefore x = 5 is the solution.",
        "So x equals 5.",
    ],
]
add(
    "m-wait-x5",
    "loop",
    "semantic",
    "wait-cycle",
    fill(
        "<think>\nSolve for x: 2x + 3 = 13.\n\nSubtract 3: 2x = 10. Divide by 2: x = 5.\n\n",
        _restate(random.Random(11), WAIT_VARIANTS),
        7000,
    ),
)

PRIME_VARIANTS = [
    [
        "Wait, is 91 prime? 91 = 7 * 13, so 91 is not prime.",
        "Hold on, 91 is 7 times 13, so 91 is composite, not prime.",
        "Hmm, 91 divided by 7 is 13, so 91 is not a prime number.",
    ],
    [
        "So the primes between 80 and 100 are 83, 89 and 97.",
        "That leaves 83, 89 and 97 as the primes between 80 and 100.",
        "So between 80 and 100 the primes are 83, 89, 97.",
    ],
    [
        "Let me double-check 87: 87 = 3 * 29, so 87 is not prime either.",
        "And 87 is 3 times 29, so 87 is also not prime.",
        "What about 87? 8 + 7 = 15 is divisible by 3, so 87 = 3 * 29 is not prime.",
    ],
    [
        "Their sum is 83 + 89 + 97 = 269.",
        "Adding them: 83 + 89 = 172, and 172 + 97 = 269.",
        "So the sum of the primes is 269.",
    ],
]
add(
    "m-primes",
    "loop",
    "semantic",
    "wait-cycle",
    fill(
        "<think>\nFind the sum of all primes between 80 and 100.\n\nCandidates: 81, 83, 85, 87, 89, 91, 93, 95, 97, 99.\n\n",
        _restate(random.Random(12), PRIME_VARIANTS),
        9000,
    ),
)

UNITS_VARIANTS = [
    [
        "The car travels 150 km in 2.5 hours, so its average speed is 150 / 2.5 = 60 km/h.",
        "Average speed = distance / time = 150 km / 2.5 h = 60 km/h.",
        "Dividing 150 km by 2.5 hours gives an average speed of 60 km/h.",
    ],
    [
        "But the question asks for the speed in meters per second. 60 km/h = 60 * 1000 / 3600 m/s = 16.67 m/s.",
        "Wait, the answer should be in m/s. Converting 60 km/h: 60 * 1000 m / 3600 s = 16.67 m/s.",
        "Hmm, the question wants meters per second, and 60 km/h is 60000 m per 3600 s, which is 16.67 m/s.",
    ],
    [
        "Let me make sure the time is 2.5 hours and not 2 hours 50 minutes. The problem says 2.5 hours, so the time is 2.5 hours.",
        "Is the time 2.5 hours or 2 hours 50 minutes? Re-reading the problem: 2.5 hours.",
        "I should confirm the time: the problem states 2.5 hours, not 2 hours 50 minutes.",
    ],
]
add(
    "m-speed",
    "loop",
    "semantic",
    "wait-cycle",
    fill(
        "<think>\nA car travels 150 km in 2.5 hours. What is its average speed in m/s?\n\n",
        _restate(random.Random(13), UNITS_VARIANTS),
        8000,
    ),
)

ZH_VARIANTS = [
    [
        "等等，我再确认一下：小明有15个苹果，给了小红6个，所以还剩15 - 6 = 9个苹果。",
        "让我再算一遍：15个苹果减去给小红的6个苹果，剩下9个苹果。",
        "嗯，小明原来有15个苹果，给出6个以后，剩下9个苹果。",
    ],
    [
        "然后小明又买了8个苹果，所以现在有9 + 8 = 17个苹果。",
        "之后又买了8个苹果，9个苹果加上8个苹果，一共17个苹果。",
        "再加上新买的8个苹果，现在小明有17个苹果。",
    ],
    [
        "所以答案是17个苹果。",
        "因此小明现在一共有17个苹果。",
        "所以最后的答案应该是17个苹果。",
    ],
]
add(
    "m-zh-apples",
    "loop",
    "semantic",
    "cjk",
    fill(
        "<think>\n题目：小明有15个苹果，给了小红6个，又买了8个，现在有多少个苹果？\n\n",
        _restate(random.Random(14), ZH_VARIANTS, "\n"),
        3500,
    ),
)

CODE_REVIEW_VARIANTS = [
    [
        "The bug is that the loop index starts at 1 instead of 0, so the first element of the list is never processed.",
        "The problem is the loop starts at index 1, which skips the first element of the list.",
        "Because the index starts from 1 rather than 0, the first element in the list is skipped.",
    ],
    [
        "To fix it, change range(1, len(items)) to range(len(items)), or better, iterate over the items directly.",
        "The fix is to use range(len(items)) instead of range(1, len(items)), or simply loop over items.",
        "Replacing range(1, len(items)) with range(len(items)) fixes it; iterating over items directly is cleaner.",
    ],
    [
        "Let me double-check the original code: for i in range(1, len(items)): total += items[i].",
        "Looking at the original code again: for i in range(1, len(items)): total += items[i].",
        "The original code is: for i in range(1, len(items)): total += items[i].",
    ],
]
add(
    "m-code-review",
    "loop",
    "semantic",
    "wait-cycle",
    fill(
        "Let me look at why the total is wrong.\n\n",
        _restate(random.Random(15), CODE_REVIEW_VARIANTS),
        8000,
    ),
)

# ---------------------------------------------------------------------------------------------
# Hard negatives
# ---------------------------------------------------------------------------------------------

CHORUS = """[Chorus]
So let the river carry me home,
Down through the valley where the wild winds roam,
I'll leave the lantern burning in the window,
So you can find me when the cold winds blow.
"""
VERSES = [
    """[Verse 1]
I was born beneath a harvest moon,
Where the cotton fields would bloom in June,
My father's hands were rough as bark,
He'd sing to us until the dark.
""",
    """[Verse 2]
The city lights were calling out my name,
I chased them like a moth into the flame,
But every street felt colder than the last,
And every friend I made was fading fast.
""",
    """[Verse 3]
Now the years have turned my hair to grey,
I've got a little more to give than take,
I see my father's face in every stream,
And hear his voice in every dream.
""",
]
song = "Here's a folk song about coming home:\n\n"
for verse in VERSES:
    song += verse + "\n" + CHORUS + "\n"
song += (
    "[Bridge]\nAnd oh, the road is long,\nBut every road leads to a song.\n\n"
    + CHORUS
    + "\n[Outro]\nCarry me home, carry me home.\n"
)
add("x-song-folk", "clean", None, "chorus", song)

CHORUS_POP = """[Chorus]
We're dancing in the neon light, light, light,
Don't wanna stop, it feels so right, right, right,
Hands up high, we own the night,
We're dancing in the neon light.
"""
POP_VERSES = [
    "[Verse 1]\nFriday night and the bass is loud,\nI lost my keys somewhere in the crowd,\nBut I don't care, I found my crew,\nAnd every song feels brand new.\n",
    "[Verse 2]\nSaturday morning, sun's too bright,\nStill got glitter from last night,\nText me back, let's do it again,\nSame old place, a quarter to ten.\n",
    "[Verse 3]\nMonday comes and the music fades,\nBack to the office, back to the grades,\nBut in my head the beat goes on,\nI'm counting down to the weekend's dawn.\n",
]
pop = ""
for verse in POP_VERSES:
    pop += verse + "\n" + CHORUS_POP + "\n"
pop += CHORUS_POP
add("x-song-pop", "clean", None, "chorus", pop)

ZH_SONG_CHORUS = "【副歌】\n月光洒在回家的路上，\n风吹过那片麦田和村庄，\n无论我走到哪个远方，\n心里永远是你的模样。\n"
ZH_VERSES = [
    "【主歌一】\n小时候我总在门前张望，\n等着父亲从田里回到家乡，\n他的肩膀扛着夕阳，\n笑声在院子里回荡。\n",
    "【主歌二】\n长大后我去了陌生的城市，\n高楼之间找不到星光，\n每个夜晚都很漫长，\n梦里总是那条小巷。\n",
    "【主歌三】\n如今我终于回到了故乡，\n老屋的窗前依旧亮着灯光，\n母亲的头发已经白了，\n她说孩子你终于回来了。\n",
]
zh_song = "这是一首关于思乡的歌：\n\n"
for verse in ZH_VERSES:
    zh_song += verse + "\n" + ZH_SONG_CHORUS + "\n"
add("x-song-zh", "clean", None, "chorus", zh_song)

CHORUS_KIDS = "Wash, wash, wash your hands,\nScrub them nice and clean,\nWash, wash, wash your hands,\nThe cleanest hands you've ever seen!\n"
KIDS_VERSES = [
    "Before we eat our lunch today,\nWe wash the germs all far away,\n",
    "After playing in the sand,\nWe wash our fingers and our hands,\n",
    "When we sneeze or when we cough,\nWe wash until the germs are off,\n",
    "After petting Rover the dog,\nOr catching Freddy the frog,\n",
]
kids = "Here's a simple handwashing song for preschoolers (to the tune of Row, Row, Row Your Boat):\n\n"
for verse in KIDS_VERSES:
    kids += verse + CHORUS_KIDS + "\n"
kids += "Tip: sing it twice through while washing to reach the recommended 20 seconds."
add("x-song-kids", "clean", None, "chorus", kids)

hymn = "Here is a poem with a refrain, in the style of a villanelle:\n\n"
refrain_a = "Do not forget the light that led you here,"
refrain_b = "The road is dark, but morning's always near."
stanzas = [
    (
        "When doubts arise and every path seems unclear,",
        "And every step you take is wrapped in fear,",
    ),
    ("The winter long, the summer far from near,", "Remember those who held your lantern dear,"),
    (
        "Though friends may leave and voices disappear,",
        "And silence fills the spaces year by year,",
    ),
    ("Hold on to hope, let every sorrow clear,", "For dawn will come to all who persevere,"),
]
hymn += f"{refrain_a}\nThough shadows fall and skies are never clear,\n{refrain_b}\n\n"
for index, (first, second) in enumerate(stanzas):
    hymn += f"{first}\n{second}\n{refrain_a if index % 2 == 0 else refrain_b}\n\n"
hymn += f"So lift your eyes, the end is drawing near,\n{refrain_a}\n{refrain_b}\n"
add("x-villanelle", "clean", None, "chorus", hymn)

# Markdown tables
rng = random.Random(7)
cities = [
    "Tokyo",
    "Delhi",
    "Shanghai",
    "São Paulo",
    "Mexico City",
    "Cairo",
    "Mumbai",
    "Beijing",
    "Dhaka",
    "Osaka",
    "New York",
    "Karachi",
    "Buenos Aires",
    "Chongqing",
    "Istanbul",
    "Kolkata",
    "Manila",
    "Lagos",
    "Rio de Janeiro",
    "Tianjin",
    "Kinshasa",
    "Guangzhou",
    "Los Angeles",
    "Moscow",
    "Shenzhen",
    "Lahore",
    "Bangalore",
    "Paris",
    "Bogotá",
    "Jakarta",
]
countries = [
    "Japan",
    "India",
    "China",
    "Brazil",
    "Mexico",
    "Egypt",
    "India",
    "China",
    "Bangladesh",
    "Japan",
    "USA",
    "Pakistan",
    "Argentina",
    "China",
    "Turkey",
    "India",
    "Philippines",
    "Nigeria",
    "Brazil",
    "China",
    "DR Congo",
    "China",
    "USA",
    "Russia",
    "China",
    "Pakistan",
    "India",
    "France",
    "Colombia",
    "Indonesia",
]
table = "Here are the 30 largest urban areas by population (2023 estimates):\n\n| Rank | City | Country | Population (millions) | Area (km²) |\n|---:|---|---|---:|---:|\n"
for index, (city, country) in enumerate(zip(cities, countries, strict=True)):
    table += f"| {index + 1} | {city} | {country} | {37.2 - index * 0.9 - rng.random():.1f} | {rng.randint(1500, 9000):,} |\n"
table += "\nNote that population figures for urban areas vary by source, depending on how the boundaries are drawn."
add("x-table-cities", "clean", None, "table", table)

table2 = "Weekly training plan for a first half marathon:\n\n| Week | Monday | Wednesday | Friday | Sunday (long run) |\n|---|---|---|---|---|\n"
plans = [
    (3, 3, 3, 5),
    (3, 4, 3, 6),
    (3, 4, 3, 7),
    (4, 4, 4, 8),
    (4, 5, 4, 6),
    (4, 5, 4, 9),
    (5, 5, 5, 10),
    (5, 6, 5, 11),
    (5, 6, 5, 8),
    (4, 5, 4, 12),
    (3, 4, 3, 8),
    (3, 3, 2, 13.1),
]
for week, (mon, wed, fri, sun) in enumerate(plans, 1):
    table2 += f"| {week} | {mon} mi easy | {wed} mi tempo | {fri} mi easy | {sun} mi |\n"
table2 += "\nRest or cross-train on the remaining days. Week 9 and week 11 are recovery weeks, so keep the pace relaxed."
add("x-table-training", "clean", None, "table", table2)

table3 = "| Parameter | Type | Default | Description |\n|---|---|---|---|\n"
params = [
    ("batch_size", "int", "32", "Number of samples per gradient update."),
    ("learning_rate", "float", "0.001", "Step size for the optimizer."),
    ("epochs", "int", "10", "Number of passes over the training data."),
    ("dropout", "float", "0.1", "Fraction of units dropped during training."),
    ("weight_decay", "float", "0.0", "L2 penalty applied to the weights."),
    ("warmup_steps", "int", "0", "Linear warmup steps for the learning rate."),
    ("max_grad_norm", "float", "1.0", "Gradient clipping threshold."),
    ("seed", "int", "42", "Random seed for reproducibility."),
    ("fp16", "bool", "False", "Use mixed-precision training."),
    ("gradient_accumulation_steps", "int", "1", "Steps to accumulate before an update."),
    ("eval_steps", "int", "500", "Evaluate every this many steps."),
    ("save_steps", "int", "500", "Save a checkpoint every this many steps."),
    ("logging_steps", "int", "50", "Log metrics every this many steps."),
    ("scheduler", "str", "linear", "Learning-rate schedule: linear, cosine or constant."),
]
for name, kind, default, description in params:
    table3 += f"| `{name}` | {kind} | `{default}` | {description} |\n"
add("x-table-params", "clean", None, "table", table3)

table4 = "Here is the monthly budget tracker for 2023:\n\n| Month | Income | Rent | Food | Transport | Savings |\n|---|---:|---:|---:|---:|---:|\n"
months = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
rng = random.Random(9)
for month in months:
    food = rng.randint(380, 520)
    transport = rng.randint(90, 160)
    table4 += f"| {month} | $4,200 | $1,450 | ${food} | ${transport} | ${4200 - 1450 - food - transport:,} |\n"
table4 += "| **Total** | **$50,400** | **$17,400** | | | |\n"
add("x-table-budget", "clean", None, "table", table4)

# Numbered lists of 100 items
words100 = """apple banana cherry date elderberry fig grape honeydew kiwi lemon mango nectarine orange papaya quince raspberry strawberry tangerine ugli vanilla watermelon ximenia yam zucchini apricot blackberry cantaloupe dragonfruit eggplant feijoa guava huckleberry jackfruit kumquat lime mulberry nutmeg olive peach pear pineapple plum pomegranate radish spinach tomato turnip walnut almond basil carrot celery chive clove coconut cucumber dill endive fennel garlic ginger horseradish kale leek lettuce mint mushroom mustard onion oregano paprika parsley parsnip pea pepper potato pumpkin rhubarb rosemary saffron sage shallot sorrel squash tarragon thyme truffle wasabi watercress arugula beet broccoli cabbage cauliflower chard chickpea corn cress""".split()
lst = "Here are 100 fruits, vegetables and herbs in the order you listed them:\n\n" + "".join(
    f"{i + 1}. {w.capitalize()}\n" for i, w in enumerate(words100[:100])
)
add("x-list-100-words", "clean", None, "numbered-list", lst)

primes = [p for p in range(2, 600) if all(p % d for d in range(2, int(p**0.5) + 1))][:100]
lst2 = (
    "The first 100 prime numbers are:\n\n"
    + "".join(f"{i + 1}. {p}\n" for i, p in enumerate(primes))
    + "\nThe 100th prime is 541."
)
add("x-list-100-primes", "clean", None, "numbered-list", lst2)

rng = random.Random(21)
first_names = [
    "James",
    "Mary",
    "John",
    "Patricia",
    "Robert",
    "Jennifer",
    "Michael",
    "Linda",
    "William",
    "Elizabeth",
    "David",
    "Barbara",
    "Richard",
    "Susan",
    "Joseph",
    "Jessica",
    "Thomas",
    "Sarah",
    "Charles",
    "Karen",
]
last_names = [
    "Smith",
    "Johnson",
    "Williams",
    "Brown",
    "Jones",
    "Garcia",
    "Miller",
    "Davis",
    "Rodriguez",
    "Martinez",
    "Hernandez",
    "Lopez",
    "Gonzalez",
    "Wilson",
    "Anderson",
    "Thomas",
    "Taylor",
    "Moore",
    "Jackson",
    "Martin",
]
lst3 = "Here are 100 sample customer records for your test database:\n\n"
for i in range(100):
    first, last = rng.choice(first_names), rng.choice(last_names)
    lst3 += f"{i + 1}. {first} {last}, {first.lower()}.{last.lower()}{rng.randint(1, 99)}@example.com, age {rng.randint(18, 80)}\n"
add("x-list-100-records", "clean", None, "numbered-list", lst3)

lst4 = "100 writing prompts for practice:\n\n"
subjects = [
    "a lighthouse keeper",
    "a retired astronaut",
    "a talking cat",
    "a lost letter",
    "an abandoned train station",
    "a chess prodigy",
    "a time traveler",
    "a small-town baker",
    "a forgotten toy",
    "a stubborn robot",
]
twists = [
    "discovers a secret",
    "must make a difficult choice",
    "meets an old friend",
    "loses something important",
    "receives an unexpected gift",
    "gets stuck in a storm",
    "tells a lie that grows",
    "finds a map",
    "wins a strange contest",
    "breaks a promise",
]
for i in range(100):
    lst4 += f"{i + 1}. Write about {subjects[i % 10]} who {twists[(i * 7 + i // 10) % 10]}.\n"
add("x-list-100-prompts", "clean", None, "numbered-list", lst4)

# Code with similar lines
code1 = """Here are the unit tests for the `parse_duration` function:

```python
import pytest

from timeparse import parse_duration


def test_seconds():
    assert parse_duration("5s") == 5
    assert parse_duration("30s") == 30
    assert parse_duration("90s") == 90


def test_minutes():
    assert parse_duration("1m") == 60
    assert parse_duration("5m") == 300
    assert parse_duration("90m") == 5400


def test_hours():
    assert parse_duration("1h") == 3600
    assert parse_duration("2h") == 7200
    assert parse_duration("24h") == 86400


def test_combined():
    assert parse_duration("1h30m") == 5400
    assert parse_duration("2h15m30s") == 8130
    assert parse_duration("1m1s") == 61


def test_invalid():
    with pytest.raises(ValueError):
        parse_duration("")
    with pytest.raises(ValueError):
        parse_duration("5x")
    with pytest.raises(ValueError):
        parse_duration("h5")
    with pytest.raises(ValueError):
        parse_duration("-5s")
```

Each test covers one unit, and `test_invalid` checks the error paths."""
add("x-code-tests", "clean", None, "code", code1)

code2 = "```python\nfrom enum import Enum\n\n\nclass HttpStatus(Enum):\n"
statuses = [
    (100, "CONTINUE"),
    (101, "SWITCHING_PROTOCOLS"),
    (200, "OK"),
    (201, "CREATED"),
    (202, "ACCEPTED"),
    (204, "NO_CONTENT"),
    (301, "MOVED_PERMANENTLY"),
    (302, "FOUND"),
    (304, "NOT_MODIFIED"),
    (307, "TEMPORARY_REDIRECT"),
    (308, "PERMANENT_REDIRECT"),
    (400, "BAD_REQUEST"),
    (401, "UNAUTHORIZED"),
    (403, "FORBIDDEN"),
    (404, "NOT_FOUND"),
    (405, "METHOD_NOT_ALLOWED"),
    (409, "CONFLICT"),
    (410, "GONE"),
    (418, "IM_A_TEAPOT"),
    (422, "UNPROCESSABLE_ENTITY"),
    (429, "TOO_MANY_REQUESTS"),
    (500, "INTERNAL_SERVER_ERROR"),
    (501, "NOT_IMPLEMENTED"),
    (502, "BAD_GATEWAY"),
    (503, "SERVICE_UNAVAILABLE"),
    (504, "GATEWAY_TIMEOUT"),
]
for code, name in statuses:
    code2 += f"    {name} = {code}\n"
code2 += "```\n\nYou can then write `HttpStatus.NOT_FOUND.value` to get 404."
add("x-code-enum", "clean", None, "code", code2)

code3 = """```css
.btn-primary {
  background-color: #0d6efd;
  border-color: #0d6efd;
  color: #fff;
}

.btn-secondary {
  background-color: #6c757d;
  border-color: #6c757d;
  color: #fff;
}

.btn-success {
  background-color: #198754;
  border-color: #198754;
  color: #fff;
}

.btn-danger {
  background-color: #dc3545;
  border-color: #dc3545;
  color: #fff;
}

.btn-warning {
  background-color: #ffc107;
  border-color: #ffc107;
  color: #000;
}

.btn-info {
  background-color: #0dcaf0;
  border-color: #0dcaf0;
  color: #000;
}

.btn-light {
  background-color: #f8f9fa;
  border-color: #f8f9fa;
  color: #000;
}

.btn-dark {
  background-color: #212529;
  border-color: #212529;
  color: #fff;
}
```

These match Bootstrap 5's default button colours."""
add("x-code-css", "clean", None, "code", code3)

code4 = "```python\nimport torch.nn as nn\n\n\nclass ConvNet(nn.Module):\n    def __init__(self, num_classes: int = 10):\n        super().__init__()\n        self.features = nn.Sequential(\n"
channels = [3, 32, 32, 64, 64, 128, 128, 256]
for i in range(len(channels) - 1):
    code4 += f"            nn.Conv2d({channels[i]}, {channels[i + 1]}, kernel_size=3, padding=1),\n            nn.BatchNorm2d({channels[i + 1]}),\n            nn.ReLU(inplace=True),\n"
    if i % 2 == 1:
        code4 += "            nn.MaxPool2d(2),\n"
code4 += "        )\n        self.classifier = nn.Linear(256 * 4 * 4, num_classes)\n\n    def forward(self, x):\n        x = self.features(x)\n        return self.classifier(x.flatten(1))\n```\n"
add("x-code-convnet", "clean", None, "code", code4)

code5 = "```yaml\nservices:\n"
for name, port in [
    ("api", 8000),
    ("worker", 8001),
    ("scheduler", 8002),
    ("web", 3000),
    ("admin", 3001),
    ("metrics", 9090),
]:
    code5 += f'  {name}:\n    image: registry.example.com/shop/{name}:1.4.2\n    restart: unless-stopped\n    env_file: .env\n    ports:\n      - "{port}:{port}"\n    depends_on:\n      - postgres\n      - redis\n'
code5 += "  postgres:\n    image: postgres:16\n    volumes:\n      - pgdata:/var/lib/postgresql/data\n  redis:\n    image: redis:7\nvolumes:\n  pgdata:\n```"
add("x-code-compose", "clean", None, "code", code5)

code6 = "```c\nswitch (opcode) {\n"
ops = ["ADD", "SUB", "MUL", "DIV", "MOD", "AND", "OR", "XOR", "SHL", "SHR"]
symbols = ["+", "-", "*", "/", "%", "&", "|", "^", "<<", ">>"]
for op, sym in zip(ops, symbols, strict=True):
    code6 += f"    case OP_{op}: {{\n        int64_t b = pop(vm);\n        int64_t a = pop(vm);\n        push(vm, a {sym} b);\n        break;\n    }}\n"
code6 += '    default:\n        fprintf(stderr, "unknown opcode %d\\n", opcode);\n        return VM_ERROR;\n}\n```'
add("x-code-switch", "clean", None, "code", code6)

# Step-by-step arithmetic
arith = "<think>\nWe need the sum of the first 20 terms of 7, 11, 15, 19, ... Let me just add them up step by step to be safe.\n\n"
total = 0
for i in range(20):
    term = 7 + 4 * i
    arith += (
        f"Term {i + 1} is {term}; adding it to the running total {total} gives {total + term}.\n"
    )
    total += term
arith += f"\nSo the sum is {total}. Check with the formula: S = n/2 * (2a + (n-1)d) = 10 * (14 + 76) = 900. Both agree.\n</think>\n\nThe sum of the first 20 terms is **900**."
add("x-arith-running", "clean", None, "arithmetic", arith)

mult = (
    "Here is the multiplication table for 7:\n\n"
    + "".join(f"7 × {i} = {7 * i}\n" for i in range(1, 21))
    + "\nA quick trick: the last digits of the multiples of 7 cycle through all ten digits."
)
add("x-arith-table", "clean", None, "arithmetic", mult)

snail = "<think>\nA snail climbs 3 feet up a 20-foot well each day and slides back 2 feet each night. How many days to get out?\n\nLet me simulate it day by day.\n\n"
height = 0
for day in range(1, 19):
    top = height + 3
    if top >= 20:
        snail += f"Day {day}: the snail climbs from {height} feet to {top} feet and reaches the top, so it does not slide back.\n"
        break
    snail += f"Day {day}: the snail climbs from {height} feet to {top} feet, then slides back to {top - 2} feet during the night.\n"
    height = top - 2
snail += "\nSo the snail gets out on day 18. The trap is to answer 20: on the last day it climbs out before sliding.\n</think>\n\nThe snail escapes on **day 18**."
add("x-arith-snail", "clean", None, "arithmetic", snail)

interest = "Let's compute the balance year by year with 5% annual compound interest on $10,000:\n\n"
balance = 10000.0
for year in range(1, 16):
    new = balance * 1.05
    interest += f"Year {year}: ${balance:,.2f} × 1.05 = ${new:,.2f}\n"
    balance = new
interest += (
    f"\nAfter 15 years the balance is about ${balance:,.2f}, more than double the original deposit."
)
add("x-arith-interest", "clean", None, "arithmetic", interest)

division = "<think>\nLet me do the long division 98765 ÷ 43 step by step.\n\n"
number, quotient = "98765", ""
remainder = 0
for digit in number:
    current = remainder * 10 + int(digit)
    q = current // 43
    quotient += str(q)
    division += f"Bring down {digit}: {current} ÷ 43 = {q}, remainder {current - 43 * q}.\n"
    remainder = current - 43 * q
division += f"\nSo 98765 ÷ 43 = {int(quotient)} remainder {remainder}. Check: 43 × {int(quotient)} + {remainder} = {43 * int(quotient) + remainder}. Correct.\n</think>\n\n98765 ÷ 43 = {int(quotient)} R {remainder}"
add("x-arith-division", "clean", None, "arithmetic", division)

fib = "<think>\nWe need F(30) for the Fibonacci sequence with F(1) = F(2) = 1. Let me compute iteratively.\n\n"
a, b = 1, 1
for n in range(3, 31):
    a, b = b, a + b
    fib += f"F({n}) = F({n - 1}) + F({n - 2}) = {a} + {b - a} = {b}\n"
fib += "\nSo F(30) = 832040.\n</think>\n\nF(30) = **832040**"
add("x-arith-fibonacci", "clean", None, "arithmetic", fib)

# Questionnaires
scale = "   ☐ Strongly disagree   ☐ Disagree   ☐ Neutral   ☐ Agree   ☐ Strongly agree\n"
questions = [
    "I understand what is expected of me at work.",
    "I have the tools and resources I need to do my job well.",
    "My manager gives me regular, useful feedback.",
    "I feel my work is recognized and appreciated.",
    "I have opportunities to learn and grow in my role.",
    "My team communicates openly and honestly.",
    "I would recommend this company as a great place to work.",
    "I can maintain a healthy balance between work and personal life.",
    "I trust the decisions made by senior leadership.",
    "I see myself still working here in two years.",
    "The onboarding process prepared me for my role.",
    "Meetings are generally a good use of my time.",
]
survey = "**Employee Engagement Survey**\n\nPlease rate how much you agree with each statement.\n\n"
for i, question in enumerate(questions, 1):
    survey += f"{i}. {question}\n{scale}\n"
survey += "Thank you for your time! Your answers are anonymous."
add("x-survey-likert", "clean", None, "questionnaire", survey)

survey2 = "## Patient intake form\n\n"
fields = [
    "Full name",
    "Date of birth",
    "Address",
    "Phone number",
    "Email",
    "Emergency contact",
    "Primary care physician",
    "Current medications",
    "Known allergies",
    "Previous surgeries",
    "Family medical history",
    "Reason for today's visit",
]
for field in fields:
    survey2 += f"**{field}:** ______________________________\n\n"
survey2 += "Please bring your insurance card and a photo ID to your appointment."
add("x-survey-intake", "clean", None, "questionnaire", survey2)

survey3 = "Customer satisfaction questionnaire\n\n"
topics = [
    "the speed of delivery",
    "the quality of the product",
    "the packaging",
    "the price",
    "the checkout process",
    "our customer support",
    "the accuracy of the product description",
    "the return policy",
]
for i, topic in enumerate(topics, 1):
    survey3 += f"Q{i}. How satisfied were you with {topic}?\n  a) Very satisfied\n  b) Satisfied\n  c) Neither satisfied nor dissatisfied\n  d) Dissatisfied\n  e) Very dissatisfied\n\n"
survey3 += (
    "Q9. Is there anything else you would like to tell us?\n\n________________________________"
)
add("x-survey-options", "clean", None, "questionnaire", survey3)

survey4 = "问卷调查：大学生阅读习惯\n\n"
zh_questions = [
    "你每周阅读纸质书的时间大约是多少？",
    "你每周阅读电子书的时间大约是多少？",
    "你最喜欢阅读哪一类书籍？",
    "你通常在什么时间阅读？",
    "你是否有固定的阅读计划？",
    "你每个月大约买几本书？",
]
for i, q in enumerate(zh_questions, 1):
    survey4 += f"{i}. {q}\nA. 从不  B. 很少  C. 有时  D. 经常  E. 总是\n\n"
survey4 += "感谢您的参与！"
add("x-survey-zh", "clean", None, "questionnaire", survey4)

# Legitimate long reasoning
reasoning1 = """<think>
Okay, let's see. The problem is: how many positive integers less than 1000 are divisible by 3 or 5 but not by 15?

First, let me count the multiples of 3 below 1000. The largest is 999 = 3 * 333, so there are 333 multiples of 3.

Then the multiples of 5 below 1000: the largest is 995 = 5 * 199, so there are 199.

The multiples of 15 below 1000: 990 = 15 * 66, so 66.

By inclusion-exclusion, the number divisible by 3 or 5 is 333 + 199 - 66 = 466.

Wait, but the problem says "but not by 15". So I need to remove the multiples of 15 from this set. Those are the 66 numbers divisible by both. So 466 - 66 = 400.

Hmm, let me double-check that reasoning. The set "divisible by 3 or 5" includes the multiples of 15 exactly once after inclusion-exclusion. Removing them leaves numbers divisible by exactly one of 3 and 5. Another way to count: divisible by 3 but not 15 is 333 - 66 = 267; divisible by 5 but not 15 is 199 - 66 = 133. Total 267 + 133 = 400. Good, that matches.

Wait, should "less than 1000" include 1000 itself? No, 1000 is not less than 1000, and anyway 1000 is divisible by 5 but the count of multiples of 5 below 1000 is still 199 because 1000 is excluded. Let me verify: multiples of 5 from 5 to 995 are 5 * 1 through 5 * 199. Yes, 199.

Let me also sanity-check with a smaller case to make sure the method works. Numbers less than 30 divisible by 3 or 5 but not 15: multiples of 3 below 30 are 3, 6, 9, 12, 15, 18, 21, 24, 27 (9 numbers); multiples of 5 are 5, 10, 15, 20, 25 (5 numbers); multiples of 15 are just 15 (1 number). Divisible by exactly one: (9 - 1) + (5 - 1) = 12. Listing them: 3, 5, 6, 9, 10, 12, 18, 20, 21, 24, 25, 27. That's 12. The method works.

So the answer is 400.
</think>

There are **400** such integers: 267 are divisible by 3 but not 15, and 133 by 5 but not 15."""
add("x-reason-incl-excl", "clean", None, "long-reasoning", reasoning1)

reasoning2 = """<think>
We need to find all real solutions of x^4 - 5x^2 + 4 = 0.

Let me substitute y = x^2. Then the equation becomes y^2 - 5y + 4 = 0.

Factoring: (y - 1)(y - 4) = 0, so y = 1 or y = 4.

Wait, I should check that both values are non-negative, since y = x^2 cannot be negative. Both 1 and 4 are positive, so that's fine.

If y = 1, then x^2 = 1, so x = 1 or x = -1.
If y = 4, then x^2 = 4, so x = 2 or x = -2.

So there are four real solutions: -2, -1, 1, 2.

Let me verify each one.
For x = 2: 16 - 20 + 4 = 0. Correct.
For x = -2: 16 - 20 + 4 = 0. Correct.
For x = 1: 1 - 5 + 4 = 0. Correct.
For x = -1: 1 - 5 + 4 = 0. Correct.

Wait, could there be complex solutions that the problem wants? It says "real solutions", so no. And a degree-4 polynomial has at most 4 roots, so we have found all of them.

Hmm, one more check: the sum of the roots should be 0 (the coefficient of x^3 is 0), and -2 - 1 + 1 + 2 = 0. The product of the roots should be 4 (the constant term, since the degree is even), and (-2)(-1)(1)(2) = 4. Both check out.

So the solutions are x = -2, -1, 1, 2.
</think>

The real solutions are **x = ±1 and x = ±2**."""
add("x-reason-quartic", "clean", None, "long-reasoning", reasoning2)

reasoning3 = """<think>
The user wants to know why their React component re-renders on every keystroke even though they used useMemo.

Let me look at the code they pasted. They have:

const filtered = useMemo(() => items.filter(i => i.name.includes(query)), [items, query]);

And the parent passes items as a prop: <List items={data.map(d => ({...d}))} />.

Wait, that's the problem. The parent creates a new array with new objects on every render, so items is a new reference each time, and useMemo's dependency check fails every time.

But the question says it re-renders on every keystroke. The keystroke updates query, which is state in the parent. So the parent re-renders, which creates a new items array, which makes useMemo recompute. Even if items were stable, query changes on every keystroke, so filtered would recompute anyway. That part is expected.

Hmm, so what is actually wrong? Recomputing filtered on each keystroke is fine and necessary, since the query changed. The real cost is probably that each row component re-renders because the objects are new. If the rows are wrapped in React.memo, they still re-render because their props are new objects.

So the fix is to memoize the mapped array in the parent: const items = useMemo(() => data.map(d => ({...d})), [data]); or better, avoid copying the objects at all. Then the row components with React.memo will skip re-rendering when their item did not change.

Wait, also check the key prop. If they use the array index as the key and the filter changes which items are shown, React will reuse the wrong components. They should use a stable id as the key.

Let me also mention the React DevTools profiler so they can confirm which components re-render and why.

So the answer: re-running the filter on each keystroke is expected; the unnecessary work comes from the new object references created in the parent and possibly from index keys.
</think>

The filter re-running on every keystroke is expected, since `query` changes. The unnecessary re-renders come from the parent: `data.map(d => ({...d}))` creates new objects on every render, so `React.memo` on the rows can never skip. Memoize that array (or drop the copy), use a stable `id` as the `key`, and confirm with the React DevTools profiler."""
add("x-reason-react", "clean", None, "long-reasoning", reasoning3)

reasoning4 = """<think>
We need the number of lattice paths from (0, 0) to (4, 4) using steps right (R) and up (U) that never go above the diagonal y = x.

This is the Catalan number C_4. Let me recall: C_n = (1 / (n + 1)) * binomial(2n, n). So C_4 = (1/5) * binomial(8, 4) = 70 / 5 = 14.

Wait, let me make sure the condition matches. "Never go above the diagonal" means y <= x at every point. Paths that touch the diagonal are allowed. Yes, that's the standard Dyck path condition, counted by the Catalan numbers.

Let me verify with smaller cases. For n = 1: paths from (0,0) to (1,1) staying at or below the diagonal: only RU. C_1 = 1. Correct.
For n = 2: RRUU and RURU. C_2 = 2. Correct.
For n = 3: RRRUUU, RRURUU, RRUURU, RURRUU, RURURU. That's 5 = C_3. Correct.

So for n = 4, the answer should be 14.

Let me double check by the reflection principle. Total paths: binomial(8, 4) = 70. Bad paths (those that go above the diagonal, touching y = x + 1) correspond by reflection to paths from (-1, 1) to (4, 4), which need 5 R steps and 3 U steps: binomial(8, 3) = 56. So good paths = 70 - 56 = 14. Same answer.

Wait, could the problem mean strictly below the diagonal except at the endpoints? Re-reading: "never go above the diagonal". So touching is allowed. If it were strictly below, the answer would be C_3 = 5. The wording says "above", so 14.
</think>

There are **14** such paths (the Catalan number C₄)."""
add("x-reason-catalan", "clean", None, "long-reasoning", reasoning4)

reasoning5 = """<think>
Let me figure out the best way to schedule these 6 tasks on 2 machines to minimize the makespan. The task durations are 7, 5, 4, 4, 3, 3 (total 26), so the best possible makespan is 13.

Let me try the greedy longest-processing-time rule. Sort descending: 7, 5, 4, 4, 3, 3.
Assign 7 to machine A (A = 7). Assign 5 to machine B (B = 5). Assign 4 to B (B = 9). Assign 4 to A (A = 11). Assign 3 to B (B = 12). Assign 3 to B? No, B = 12 and A = 11, so assign to A (A = 14). Makespan 14.

Hmm, that's not 13. Let me look for a partition into two sets of 13. 7 + 3 + 3 = 13, and 5 + 4 + 4 = 13. Yes! So machine A gets 7, 3, 3 and machine B gets 5, 4, 4. Makespan 13.

So greedy LPT is not optimal here, which is a known fact: LPT is a 4/3-approximation, not exact.

Wait, is 13 actually achievable in terms of the order? On each machine the order doesn't matter for the makespan, since there are no dependencies. So yes, 13.

Let me double-check there's no mistake in the durations: 7 + 5 + 4 + 4 + 3 + 3 = 26. Half is 13. And we found a perfect split. So the optimum is 13, and it's a lower bound too, so it's optimal.
</think>

Put tasks {7, 3, 3} on one machine and {5, 4, 4} on the other: both finish at time **13**, which is optimal (26 / 2)."""
add("x-reason-schedule", "clean", None, "long-reasoning", reasoning5)

reasoning_zh = """<think>
好的，用户问的是：一个长方形的周长是36厘米，长比宽多4厘米，求面积。

设宽为x厘米，那么长为x + 4厘米。
周长 = 2 * (长 + 宽) = 2 * (x + 4 + x) = 4x + 8 = 36。
所以4x = 28，x = 7。
宽是7厘米，长是11厘米。

等等，我验证一下：周长 = 2 * (11 + 7) = 36，正确。长比宽多11 - 7 = 4，正确。

面积 = 11 * 7 = 77平方厘米。

再检查一下单位，周长是厘米，面积是平方厘米，没有问题。

另外，我想用另一种方法验证一下：周长的一半是18，长加宽等于18，长减宽等于4，所以长 = (18 + 4) / 2 = 11，宽 = (18 - 4) / 2 = 7。结果一致。

所以答案是77平方厘米。
</think>

这个长方形的面积是**77平方厘米**。"""
add("x-reason-zh", "clean", None, "long-reasoning", reasoning_zh)

reasoning6 = "<think>\nWe need to check which of the numbers from 1 to 20 are perfect numbers, abundant or deficient.\n\n"


def _divisor_sum(n: int) -> int:
    return sum(d for d in range(1, n) if n % d == 0)


for n in range(1, 21):
    s = _divisor_sum(n)
    kind = "perfect" if s == n else ("abundant" if s > n else "deficient")
    divisors = ", ".join(str(d) for d in range(1, n) if n % d == 0) or "none"
    reasoning6 += f"n = {n}: proper divisors {divisors}; their sum is {s}, so {n} is {kind}.\n"
reasoning6 += "\nSo 6 is the only perfect number up to 20, and the abundant ones are 12, 18 and 20.\n</think>\n\nOnly **6** is perfect; **12, 18, 20** are abundant; the rest are deficient."
add("x-reason-enumerate", "clean", None, "long-reasoning", reasoning6)

# Other legitimate repetition
logs = "Here are the relevant lines from the server log:\n\n```\n"
rng = random.Random(5)
paths = [
    "/api/orders",
    "/api/users/me",
    "/api/cart",
    "/healthz",
    "/api/products?page=2",
    "/api/orders/8812",
    "/static/app.js",
    "/api/login",
]
for i in range(40):
    status = rng.choice([200, 200, 200, 200, 201, 304, 404, 500])
    logs += f"2024-05-12T14:{i // 6 + 10:02d}:{(i * 7) % 60:02d}Z {rng.choice(['GET', 'GET', 'POST'])} {rng.choice(paths)} {status} {rng.randint(3, 900)}ms\n"
logs += "```\n\nThe 500 errors all come from the orders endpoint, which points at the payment service timeout."
add("x-logs", "clean", None, "logs", logs)

json_data = "```json\n[\n"
rng = random.Random(6)
products = [
    "Wireless Mouse",
    "Mechanical Keyboard",
    "USB-C Hub",
    "27-inch Monitor",
    "Laptop Stand",
    "Webcam",
    "Noise-Cancelling Headphones",
    "Desk Lamp",
    "Ergonomic Chair",
    "Standing Desk",
    "Portable SSD",
    "Bluetooth Speaker",
]
for i, name in enumerate(products):
    json_data += f'  {{"sku": "SKU-{1040 + i * 13}", "name": "{name}", "price": {rng.randint(15, 600)}.99, "in_stock": {str(rng.random() > 0.3).lower()}, "rating": {rng.randint(30, 50) / 10}}},\n'
json_data += "]\n```"
add("x-json-products", "clean", None, "json", json_data)

recipe = """Here's a classic lasagna recipe.

**Ingredients**
- 12 lasagna noodles
- 1 lb ground beef
- 1 onion, diced
- 3 cloves garlic, minced
- 24 oz marinara sauce
- 15 oz ricotta cheese
- 1 egg
- 2 cups shredded mozzarella
- 1/2 cup grated parmesan

**Instructions**
1. Preheat the oven to 375°F (190°C).
2. Cook the noodles according to the package directions. Drain and set aside.
3. Brown the beef with the onion and garlic. Drain the fat, then stir in the marinara.
4. Mix the ricotta, egg and half of the parmesan in a bowl.
5. Spread a thin layer of meat sauce in a 9x13 baking dish.
6. Add a layer of noodles, then a layer of the ricotta mixture, then a layer of meat sauce, then a layer of mozzarella.
7. Repeat: a layer of noodles, a layer of the ricotta mixture, a layer of meat sauce, a layer of mozzarella.
8. Repeat once more, finishing with noodles, sauce, mozzarella and the remaining parmesan.
9. Cover with foil and bake for 25 minutes. Uncover and bake 25 minutes more.
10. Let it rest for 15 minutes before cutting.

Enjoy!"""
add("x-recipe-layers", "clean", None, "instructions", recipe)

legal = "## Terms of Service (excerpt)\n\n"
sections = [
    "Account registration",
    "Acceptable use",
    "Payment terms",
    "Termination",
    "Intellectual property",
    "Limitation of liability",
    "Governing law",
]
for i, section in enumerate(sections, 1):
    legal += f"### {i}. {section}\n\n{i}.1 The provisions of this section apply to all users of the Service, including visitors, registered users and paying customers.\n\n{i}.2 "
    legal += [
        "You must provide accurate information when creating an account.",
        "You may not use the Service to send spam or to distribute malware.",
        "Fees are billed monthly in advance and are non-refundable.",
        "We may suspend your account if you breach these terms.",
        "All content provided by us remains our property.",
        "Our total liability is limited to the fees paid in the last 12 months.",
        "These terms are governed by the laws of the State of New York.",
    ][i - 1]
    legal += "\n\n"
add("x-legal-clauses", "clean", None, "instructions", legal)

chat_end = "The three primary colors of light are red, green and blue. Mixing all three at full intensity gives white light.<|im_end|>"
add("x-special-once", "clean", None, "special-token", chat_end)

poem_zh = "静夜思\n\n床前明月光，疑是地上霜。\n举头望明月，低头思故乡。\n\n这首诗是李白的名作，前两句写月光，后两句写思乡之情。诗中两次出现“明月”，这种重复不是多余的，而是强调了月亮在诗人心中的分量。"
add("x-poem-zh", "clean", None, "cjk", poem_zh)

zh_steps = "做番茄炒蛋的步骤：\n\n"
zh_steps += "第一步：把两个番茄洗净，切成小块。\n第二步：把三个鸡蛋打进碗里，加少许盐，搅拌均匀。\n第三步：锅里放油，油热后倒入蛋液，炒到凝固后盛出。\n第四步：锅里再放一点油，放入番茄块，翻炒出汁。\n第五步：把炒好的鸡蛋倒回锅里，和番茄一起翻炒。\n第六步：加入适量的盐和一点糖调味，翻炒均匀后出锅。\n\n小贴士：番茄要炒出汁再放鸡蛋，这样味道更浓。"
add("x-steps-zh", "clean", None, "cjk", zh_steps)

markdown_sep = "| Feature | Free | Pro | Team | Enterprise |\n|:---|:---:|:---:|:---:|:---:|\n"
features = [
    "Projects",
    "Storage",
    "Collaborators",
    "Version history",
    "Custom domains",
    "SSO",
    "Audit logs",
    "Priority support",
    "SLA",
    "API access",
]
for i, feature in enumerate(features):
    marks = ["✓" if (i + j) % 3 != 0 or j >= 2 else "—" for j in range(4)]
    markdown_sep += f"| {feature} | " + " | ".join(marks) + " |\n"
add("x-table-features", "clean", None, "table", markdown_sep)

chess = (
    "Here is the empty 8×8 board with coordinates:\n\n```\n  +---+---+---+---+---+---+---+---+\n"
)
for rank in range(8, 0, -1):
    chess += f"{rank} |   |   |   |   |   |   |   |   |\n  +---+---+---+---+---+---+---+---+\n"
chess += "    a   b   c   d   e   f   g   h\n```\n\nPlace the white pieces on ranks 1 and 2 and the black pieces on ranks 7 and 8."
add("x-ascii-board", "clean", None, "table", chess)


# ---------------------------------------------------------------------------------------------
# Harder loops
# ---------------------------------------------------------------------------------------------

R1_PREFIX = """<think>
Okay, let's try to tackle this problem. We need to find the number of ordered pairs (a, b) of positive integers such that a + b = 1000 and neither a nor b has a zero digit.

First, let me understand the problem. For each a from 1 to 999, b = 1000 - a, and we need both a and b to be free of the digit 0. So I need to count the a in [1, 999] such that a has no zero digit and 1000 - a has no zero digit.

Let me think about how the digits of a and b relate. If a is a three-digit number with digits x, y, z (so a = 100x + 10y + z), then b = 1000 - a. Let's compute b's digits. When z is nonzero, the units digit of b is 10 - z, the tens digit is 9 - y, and the hundreds digit is 9 - x. So b = 100(9 - x) + 10(9 - y) + (10 - z).

For b to have no zero digits, we need 9 - x != 0, 9 - y != 0, and 10 - z != 0. The last condition always holds since z is between 1 and 9. But wait, if 9 - x = 0, then b is a two-digit number, and the leading zero doesn't count as a digit. Hmm, so I need to be careful with the number of digits of b.

Let me split into cases based on the number of digits of a.

Case 1: a is a three-digit number, 100 <= a <= 999. Then x is from 1 to 9 and y, z are from 1 to 9 (no zeros in a). For b: the units digit 10 - z is from 1 to 9, fine. The tens digit 9 - y must be nonzero unless b has fewer digits, so y != 9. The hundreds digit 9 - x: if x = 9, then b < 100, and b's hundreds digit is just absent; then b = 10(9 - y) + (10 - z), and its tens digit 9 - y must be nonzero (since b would then be two-digit), so y != 9 still.

"""
R1_LOOP = """Wait, let me re-examine the case x = 9. If x = 9, then b = 1000 - a = 1000 - 900 - 10y - z = 100 - 10y - z. With y from 1 to 8 and z from 1 to 9, b ranges from 100 - 80 - 9 = 11 to 100 - 10 - 1 = 89. So b is a two-digit number, and its digits are 9 - y and 10 - z, both nonzero. So for x = 9 we get 8 * 9 = 72 values of a.

For x from 1 to 8, the hundreds digit of b is 9 - x, which is from 1 to 8, nonzero. So we need y from 1 to 8 and z from 1 to 9, which gives 8 * 8 * 9 = 576 values.

So Case 1 gives 576 + 72 = 648.

Hmm, but I should double-check whether the tens digit condition is right when z is nonzero. The subtraction 1000 - a with z != 0 borrows from every digit, so the units digit is 10 - z and the other digits are 9 minus the digit of a. Yes, that's correct.

"""
add("v-r1-long", "loop", "verbatim", "paragraph", fill(R1_PREFIX, R1_LOOP, 30000))

add(
    "v-escaped",
    "loop",
    "verbatim",
    "paragraph",
    fill(R1_PREFIX, R1_LOOP, 21000).rsplit("Wait, let me", 1)[0]
    + "OK, I keep repeating myself. Let me just add the other cases: two-digit a gives 72 and one-digit a gives 9, so the total is 648 + 72 + 9 = 729.\n</think>\n\nThe number of ordered pairs is **729**.",
)

add(
    "v-blank-lines",
    "loop",
    "verbatim",
    "whitespace",
    fill("The answer is 12.\n\n**Final Answer**\n\\boxed{12}", "\n", 1500),
)
add("v-zeros", "loop", "verbatim", "code", fill("```python\nweights = [0.5, 0.25, ", "0, ", 2500))
add(
    "v-table-row",
    "loop",
    "verbatim",
    "table",
    fill(
        "| Model | Params | MMLU | GSM8K |\n|---|---|---|---|\n| Llama-3-8B | 8B | 66.6 | 79.6 |\n",
        "| Mistral-7B | 7B | 62.5 | 52.2 |\n",
        3000,
    ),
)
add(
    "v-bullets",
    "loop",
    "verbatim",
    "line-cycle",
    fill(
        "Before submitting, go through this checklist:\n\n",
        "- Check the units of every quantity.\n- Check the arithmetic in each step.\n- Check that the answer answers the question.\n",
        4000,
    ),
)

HUGE_BLOCK = (
    LONG_BLOCK
    + """Let me restate the whole solution in one place so that I can check it against the answer key. The constraint is that the top corners lie on the circle, which is what gives the relation between the half-width and the height. The objective is the area of the rectangle, which is the full width times the height. Eliminating the height with the constraint leaves a one-variable problem, and the substitution u = x^2 turns it into a quadratic that we can maximize by completing the square, with no calculus needed at all. The critical value sits exactly halfway between the two roots of the quadratic, at u = r^2 / 2, which is where the derivative computation also put it.

"""
)
add(
    "s-huge-block",
    "loop",
    "segment",
    "block",
    fill(
        "<think>\nFind the largest rectangle inscribed in a semicircle of radius 10.\n\n",
        HUGE_BLOCK,
        40000,
    ),
)

SYNONYMS = {
    "check": ["check", "verify", "confirm", "double-check", "recompute"],
    "again": ["again", "once more", "one more time", "carefully", "from scratch"],
    "so": ["So", "Therefore", "Thus", "Hence", "This means"],
    "negative": ["negative", "less than zero", "below zero", "not positive"],
    "seems": ["seems", "appears", "looks like it is", "is clearly meant", "was probably meant"],
    "wrong": ["wrong", "incorrectly", "with a typo", "the wrong way round"],
}


def _paraphrase_loop(rng: random.Random):
    def body(index: int) -> str:
        pick = {key: rng.choice(values) for key, values in SYNONYMS.items()}
        lines = [
            f"Let me {pick['check']} the discriminant {pick['again']}: b^2 - 4ac = 36 - 4 * 2 * 5 = 36 - 40 = -4.",
            f"{pick['so']} the discriminant -4 is {pick['negative']}, and the quadratic 2x^2 + 6x + 5 has no real roots.",
            f"But the problem {pick['seems']} to have real solutions, so maybe I copied the coefficients {pick['wrong']}: a = 2, b = 6, c = 5.",
        ]
        return "\n\n".join(lines) + "\n\n"

    return body


add(
    "m-discriminant",
    "loop",
    "semantic",
    "wait-cycle",
    fill(
        "<think>\nSolve 2x^2 + 6x + 5 = 0 over the reals.\n\n",
        _paraphrase_loop(random.Random(17)),
        9000,
    ),
)

# ---------------------------------------------------------------------------------------------
# Harder negatives
# ---------------------------------------------------------------------------------------------

outro_song = ""
for verse in VERSES:
    outro_song += verse + "\n" + CHORUS + "\n"
outro_song += CHORUS
add("x-song-outro", "clean", None, "chorus", outro_song)

matrix = (
    "```python\n>>> import numpy as np\n>>> np.zeros((8, 8), dtype=int)\narray(["
    + ",\n       ".join(["[0, 0, 0, 0, 0, 0, 0, 0]"] * 8)
    + "])\n```\n\nAll 64 entries are zero; use `np.eye(8, dtype=int)` for the identity instead."
)
add("x-zero-matrix", "clean", None, "code", matrix)

blank = (
    "Here's a blank reading log you can print:\n\n| Date | Book title | Pages read | Notes |\n|------|------------|------------|-------|\n"
    + "|      |            |            |       |\n" * 12
)
add("x-blank-table", "clean", None, "table", blank)

usernames = "Here are 100 placeholder usernames for the load test:\n\n" + "".join(
    f"{i}. loadtest_user{i:03d}\n" for i in range(1, 101)
)
add("x-list-100-usernames", "clean", None, "numbered-list", usernames)

calendar = "Here is March 2024:\n\n| Mon | Tue | Wed | Thu | Fri | Sat | Sun |\n|---|---|---|---|---|---|---|\n|   |   |   |   | 1 | 2 | 3 |\n"
day = 4
while day <= 31:
    row = [str(d) if d <= 31 else " " for d in range(day, day + 7)]
    calendar += "| " + " | ".join(row) + " |\n"
    day += 7
add("x-calendar", "clean", None, "table", calendar)

pytest_out = "============================= test session starts ==============================\ncollected 24 items\n\n"
names = [
    "test_add",
    "test_sub",
    "test_mul",
    "test_div",
    "test_mod",
    "test_pow",
    "test_neg",
    "test_abs",
    "test_round",
    "test_floor",
    "test_ceil",
    "test_sqrt",
    "test_log",
    "test_exp",
    "test_sin",
    "test_cos",
    "test_tan",
    "test_min",
    "test_max",
    "test_sum",
    "test_mean",
    "test_median",
    "test_parse",
    "test_format",
]
for i, name in enumerate(names, 1):
    pytest_out += (
        f"tests/test_calc.py::{name} PASSED{' ' * 20}[{round(100 * i / len(names)):3d}%]\n"
    )
pytest_out += "\n============================== 24 passed in 0.42s =============================="
add("x-pytest-output", "clean", None, "logs", pytest_out)

download = (
    "".join(
        f"Downloading model weights: {p}% complete ({p * 14 // 10} MB of 140 MB)\n"
        for p in range(10, 101, 10)
    )
    + "Download finished. Verifying checksum... OK."
)
add("x-progress-finishes", "clean", None, "logs", download)

aime = """<think>
Okay, so I need to find the remainder when 2^2024 + 3^2024 is divided by 13. Let me think.

By Fermat's little theorem, since 13 is prime, 2^12 ≡ 1 (mod 13) and 3^12 ≡ 1 (mod 13).

2024 divided by 12: 12 * 168 = 2016, so 2024 = 12 * 168 + 8. So 2^2024 ≡ 2^8 (mod 13) and 3^2024 ≡ 3^8 (mod 13).

2^8 = 256. 256 divided by 13: 13 * 19 = 247, so 256 - 247 = 9. So 2^8 ≡ 9 (mod 13).

Wait, let me double-check: 13 * 19 = 247, yes. 256 - 247 = 9. Okay.

3^8: 3^3 = 27 ≡ 1 (mod 13) since 27 - 26 = 1. Oh nice, so the order of 3 mod 13 is 3. Then 3^8 = 3^(3*2 + 2) = (3^3)^2 * 3^2 ≡ 1 * 9 = 9 (mod 13).

Wait, so 3^2024 ≡ 9 as well? Let me recompute using the order 3 directly: 2024 mod 3 = 2024 - 3 * 674 = 2024 - 2022 = 2. So 3^2024 ≡ 3^2 = 9 (mod 13). Yes, consistent with the Fermat computation.

So the sum is 9 + 9 = 18 ≡ 5 (mod 13).

Hmm, wait. Let me double check 2^8 mod 13 by repeated squaring. 2^2 = 4, 2^4 = 16 ≡ 3, 2^8 = 3^2 = 9. Yes, 9.

And let me double check that I have the exponent reduction right for 2. The order of 2 mod 13: 2^1 = 2, 2^2 = 4, 2^3 = 8, 2^4 = 16 ≡ 3, 2^6 = 64 ≡ 12 ≡ -1, so 2^12 ≡ 1 and the order is 12. So 2 is a primitive root mod 13. Then 2^2024 ≡ 2^(2024 mod 12) = 2^8 ≡ 9. Good.

Wait, but is the question asking for 2^2024 + 3^2024 or (2 + 3)^2024? Let me re-read: "the remainder when 2^2024 + 3^2024 is divided by 13". Yes, the sum of the two powers.

Just to be extra careful, let me verify the final step: 18 = 13 + 5, so the remainder is 5.

Let me also sanity check the approach on a small exponent: 2^2 + 3^2 = 13 ≡ 0 (mod 13). With the formula: 2^2 = 4 and 3^2 = 9, sum 13 ≡ 0. Fine, trivially consistent.

And another: exponent 8: 2^8 + 3^8 = 256 + 6561 = 6817. 6817 / 13 = 524.38..., 13 * 524 = 6812, remainder 5. That matches 9 + 9 = 18 ≡ 5. Since 2024 ≡ 8 (mod 12), the answer for 2024 must equal the answer for 8, which is 5.

So the remainder is 5.
</think>

The remainder is **5**.

Since 2024 ≡ 8 (mod 12), Fermat's little theorem gives 2^2024 ≡ 2^8 ≡ 9 and 3^2024 ≡ 3^8 ≡ 9 (mod 13), so the sum is 18 ≡ 5 (mod 13)."""
add("x-reason-aime", "clean", None, "long-reasoning", aime)

screenplay = """INT. KITCHEN - NIGHT

ALICE stands at the sink. BOB enters, holding a letter.

BOB
You need to read this.

ALICE
Not now, Bob.

BOB
It's from your father.

ALICE
(turning)
My father has been dead for ten years.

BOB
I know. That's why you need to read it.

ALICE takes the letter. She reads in silence.

ALICE
Where did you find this?

BOB
In the attic. Behind the old piano.

ALICE
(quietly)
He always said he'd leave me something.

BOB
What does it say?

ALICE
It says he's sorry.

She folds the letter and puts it in her pocket.

FADE OUT."""
add("x-screenplay", "clean", None, "dialogue", screenplay)

cases = """<think>
We need to solve |x - 2| + |x + 1| = 5.

The critical points are x = 2 and x = -1, so there are three cases.

Case 1: x < -1. Then |x - 2| = 2 - x and |x + 1| = -x - 1, so the equation becomes 2 - x - x - 1 = 5, which gives 1 - 2x = 5, so x = -2. Since -2 < -1, this solution is valid.

Case 2: -1 <= x < 2. Then |x - 2| = 2 - x and |x + 1| = x + 1, so the equation becomes 2 - x + x + 1 = 5, which gives 3 = 5, a contradiction. No solution in this case.

Case 3: x >= 2. Then |x - 2| = x - 2 and |x + 1| = x + 1, so the equation becomes x - 2 + x + 1 = 5, which gives 2x - 1 = 5, so x = 3. Since 3 >= 2, this solution is valid.

Let me verify: for x = -2, |-4| + |-1| = 4 + 1 = 5. Correct. For x = 3, |1| + |4| = 1 + 4 = 5. Correct.

So the solutions are x = -2 and x = 3.
</think>

The solutions are **x = -2** and **x = 3**."""
add("x-reason-cases", "clean", None, "long-reasoning", cases)


def main() -> None:
    out = HERE / "corpus.jsonl"
    with out.open("w", encoding="utf-8") as handle:
        for sample in SAMPLES:
            handle.write(json.dumps(sample, ensure_ascii=False) + "\n")
    loops = sum(1 for s in SAMPLES if s["label"] == "loop")
    print(f"wrote {len(SAMPLES)} samples ({loops} loops, {len(SAMPLES) - loops} clean) to {out}")


if __name__ == "__main__":
    main()
