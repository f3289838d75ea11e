# SPDX-License-Identifier: Apache-2.0
"""The enrich operator's inputs and what it gives a row, shared by the
enrich tests and the enrich + pattern job of the two-input checkpoint tests:
transactions enriched with account rows (two file sources, event time)."""
import bisect

MAX_WAIT = 2000  # ms, the enrich operator's max_wait

# The two file sources and the enrich operator between them, shared with
# the enrich + pattern job of join_checkpoint_tests.py (a format template:
# {work} and {max_wait} filled in by the caller's format()).
ENRICH_INPUTS = """
[[source]]
name = "transactions"
type = "file"
path = "{work}/transactions.jsonl"
format = "jsonl"
schema = {{ tx = "int64", account = "int64", amount = "int64", ts = "timestamp" }}
event_time = {{ field = "ts" }}
watermark = {{ max_out_of_orderness = "1s" }}

[[source]]
name = "accounts"
type = "file"
path = "{work}/accounts.jsonl"
format = "jsonl"
schema = {{ id = "int64", tier = "string", ts = "timestamp" }}
event_time = {{ field = "ts" }}
watermark = {{ max_out_of_orderness = "0s" }}

[[operator]]
name = "enriched"
type = "enrich"
inputs = ["transactions", "accounts"]
key_by = ["account"]
table_key = ["id"]
fields = ["tier"]
max_wait = "{max_wait}ms"
"""


def tier_at(times, tiers, ts):
    """The tier enrich gives a transaction at `ts` whose account's rows came
    at `times` (ascending) with `tiers`: the latest row at or before `ts`;
    else the first row if it comes within MAX_WAIT; else None."""
    i = bisect.bisect_right(times, ts)
    if i > 0:
        return tiers[i - 1]
    return tiers[0] if times and times[0] <= ts + MAX_WAIT else None
