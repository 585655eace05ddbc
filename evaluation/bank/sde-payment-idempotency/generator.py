"""Hidden-test generator for sde-payment-idempotency (trusted bank code, plain stdlib).

Expected responses come from the efficient reference's service (rendered from
references/efficient/ with this instance's parameters and names, executed in-process); every
functional case is replayed a second time through a brute-force variant whose list endpoint
scans and sorts every payment, and the two must agree. Logs are built interactively: a list
request that follows a page uses the cursor the service returned for the page before, so the
hidden logs hold the cursors a real client would send.

The performance log comes from ``perf_rng`` only (seeded by [performance] params), so every
instance that agrees on ``perf_requests`` has the same input and shares one calibration.
"""

from __future__ import annotations

import json
import string
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
T0 = 1_717_200_000_000  # logical clock origin (ms)
HOUR = 3_600_000
CURRENCIES = ["USD", "EUR", "GBP", "CHF", "SEK", "JPY"]
DECLINES = ["pm_card_declined", "pm_card_insufficient_funds", "pm_card_lost", "pm_card_expired"]
GOOD_METHODS = ["pm_card_visa", "pm_card_mastercard", "pm_card_amex", "pm_sepa_debit", "pm_card_visa_debit"]
ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
# Settings the performance log is drawn under (its requests must not depend on the instance).
PERF_SETTINGS = {"key_ttl_hours": 24, "lock_lease_s": 60, "default_limit": 20, "max_limit": 100,
                 "description_max_length": 350, "metadata_max_keys": 10}
WORDS = ["order", "invoice", "basket", "renewal", "topup", "deposit", "ticket", "plan"]


# --------------------------------------------------------------------------------------
# The model: the efficient reference, rendered and executed here.
# --------------------------------------------------------------------------------------
def _render(relative: str, mapping: dict) -> str:
    return string.Template((HERE / relative).read_text(encoding="utf-8")).substitute(mapping)


def _mapping(params: dict, names: dict) -> dict:
    return {**{k: str(v) for k, v in params.items()}, **names, "company": "x", "lead": "x"}


def _model(params: dict, names: dict):
    mapping = _mapping(params, names)
    pkg = names["package"]
    config = tomllib.loads(_render("files/config/payments.toml.tmpl", mapping))
    ids_ns: dict = {"__name__": pkg + ".ids"}
    exec(compile(_render("files/${package}/ids.py.tmpl", mapping), "ids", "exec"), ids_ns)
    val_ns: dict = {"__name__": pkg + ".validation"}
    val_src = _render("references/efficient/${package}/validation.py.tmpl", mapping)
    exec(compile(val_src, "validation", "exec"), val_ns)
    svc_src = _render("references/efficient/${package}/service.py.tmpl", mapping)
    svc_src = svc_src.replace(f"from {pkg}.ids import payment_id\n", "")
    svc_src = svc_src.replace(f"from {pkg}.validation import validate_payment\n", "")
    svc_ns: dict = {
        "__name__": pkg + ".service",
        "payment_id": ids_ns["payment_id"],
        "validate_payment": val_ns["validate_payment"],
    }
    exec(compile(svc_src, "service", "exec"), svc_ns)
    service_cls = svc_ns["PaymentsService"]

    class ScanService(service_cls):
        """Brute force: the list endpoint filters and sorts every payment on every page."""

        def list(self, merchant, query):  # noqa: A003
            probe = service_cls.list(self, merchant, query)
            if probe["status"] != 200:
                return probe
            params = dict(part.partition("=")[::2] for part in query.split("&") if part)
            limit = min(int(params.get("limit", self.default_limit)), self.max_limit)
            before = svc_ns["decode_cursor"](params["cursor"]) if "cursor" in params else None
            rows = []
            for pid, payment in self.payments.items():
                if self.owner[pid] != merchant:
                    continue
                if "customer" in params and payment["customer"] != params["customer"]:
                    continue
                if "status" in params and payment["status"] != params["status"]:
                    continue
                if "created_gte" in params and payment["created_at"] < int(params["created_gte"]):
                    continue
                if "created_lt" in params and payment["created_at"] >= int(params["created_lt"]):
                    continue
                key = (payment["created_at"], payment["id"])
                if before is not None and not key < before:
                    continue
                rows.append(payment)
            rows.sort(key=lambda p: (p["created_at"], p["id"]), reverse=True)
            data = rows[:limit]
            more = len(rows) > limit
            cursor = svc_ns["encode_cursor"](data[-1]["created_at"], data[-1]["id"]) if more else None
            body = {"object": "list", "data": data, "has_more": more, "next_cursor": cursor}
            return {"status": 200, "headers": {}, "body": body}

    return config, service_cls, ScanService


def _replay(service_cls, config, log):
    service = service_cls(config)
    return json.loads(json.dumps([service.handle(request) for request in log]))


# --------------------------------------------------------------------------------------
# Building logs
# --------------------------------------------------------------------------------------
class Log:
    """A log under construction, replayed live so follow-up pages can use real cursors."""

    def __init__(self, service_cls, config, start=T0):
        self.service = service_cls(config)
        self.requests: list[dict] = []
        self.responses: list[dict] = []
        self.now = start

    def tick(self, ms: int) -> int:
        self.now += ms
        return self.now

    def send(self, request: dict) -> dict:
        request = {"at": self.now, **request}
        self.requests.append(request)
        response = self.service.handle(request)  # payments are never mutated once committed
        self.responses.append(response)
        return response

    def post(self, merchant, body, key=None, fault=None, header_style="canonical", order=None):
        headers = {}
        names = {
            "canonical": ("Merchant-Id", "Idempotency-Key"),
            "lower": ("merchant-id", "idempotency-key"),
            "upper": ("MERCHANT-ID", "IDEMPOTENCY-KEY"),
        }[header_style]
        if merchant is not None:
            headers[names[0]] = merchant
        if key is not None:
            headers[names[1]] = key
        if isinstance(body, str):
            text = body
        else:
            items = list(body.items())
            if order is not None:
                order.shuffle(items)
            text = json.dumps(dict(items), separators=(",", ":"))
        request = {"method": "POST", "path": "/v1/payments", "headers": headers, "body": text}
        if fault:
            request["fault"] = fault
        return self.send(request)

    def get(self, merchant, path, header_style="canonical"):
        name = "merchant-id" if header_style == "lower" else "Merchant-Id"
        headers = {name: merchant} if merchant is not None else {}
        return self.send({"method": "GET", "path": path, "headers": headers})


def _customer(rng):
    return "cus_" + "".join(rng.choice(ALNUM) for _ in range(rng.randint(10, 14)))


def _merchant(rng):
    return "acct_" + "".join(rng.choice("0123456789ABCDEFGHJKLMNPQRSTUVWXYZ") for _ in range(10))


def _key(rng):
    return "".join(rng.choice("0123456789abcdef") for _ in range(8)) + "-" + "".join(
        rng.choice("0123456789abcdef") for _ in range(12)
    )


def _body(rng, customer, currency=None, method=None, extras=True):
    currency = currency or rng.choice(CURRENCIES)
    low = {"GBP": 30, "SEK": 300}.get(currency, 50)
    body = {
        "amount": rng.randint(low, low * 400),
        "currency": currency if rng.random() < 0.7 else currency.lower(),
        "customer": customer,
        "payment_method": method or rng.choice(GOOD_METHODS),
    }
    if extras and rng.random() < 0.5:
        body["description"] = f"{rng.choice(WORDS)} {rng.randint(1000, 99999)}"
    if extras and rng.random() < 0.3:
        body["capture"] = rng.random() < 0.6
    if extras and rng.random() < 0.3:
        body["metadata"] = {rng.choice(WORDS): str(rng.randint(1, 999)) for _ in range(rng.randint(1, 3))}
    if extras and rng.random() < 0.15:
        body["statement_descriptor"] = rng.choice(["ACME STORE", "Books n More", "TICKETS 24", "PLAN RENEWAL"])
    if extras and rng.random() < 0.15:
        body["receipt_email"] = f"{rng.choice(WORDS)}{rng.randint(1, 99)}@example.com"
    return body


def _invalid_bodies(rng, customer, params):
    """(body, why) pairs, each breaking one rule of the style guide's table (or two, to test
    which one is reported first)."""
    base = {"amount": 1200, "currency": "EUR", "customer": customer, "payment_method": "pm_card_visa"}
    out = []

    def with_(**changes):
        body = dict(base)
        for name, value in changes.items():
            if value is _DROP:
                body.pop(name, None)
            else:
                body[name] = value
        return body

    out.append(with_(amount=_DROP))
    out.append(with_(amount=True))
    out.append(with_(amount=12.5))
    out.append(with_(amount="1200"))
    out.append(with_(currency=_DROP))
    out.append(with_(currency="EURO"))
    out.append(with_(currency="xxx"))
    out.append(with_(currency="jpy", amount=49))
    out.append(with_(currency="GBP", amount=29))
    out.append(with_(currency="gbp", amount=30))  # valid: lowest GBP amount
    out.append(with_(currency="JPY", amount=10_000_000))
    out.append(with_(amount=99_999_999))  # valid: the EUR maximum
    out.append(with_(customer="cus_short"))
    out.append(with_(customer="customer_12345678"))
    out.append(with_(customer=None))
    out.append(with_(payment_method="card_visa"))
    out.append(with_(payment_method=42))
    out.append(with_(capture="false"))
    out.append(with_(description="x" * (params["description_max_length"] + 1)))
    out.append(with_(description="x" * params["description_max_length"]))  # valid
    out.append(with_(statement_descriptor="ABC"))
    out.append(with_(statement_descriptor="A" * 23))
    out.append(with_(statement_descriptor="BEST <DEAL>"))
    out.append(with_(statement_descriptor="12345678"))
    out.append(with_(receipt_email="not-an-email"))
    out.append(with_(receipt_email="a b@example.com"))
    out.append(with_(metadata=["a"]))
    out.append(with_(metadata={f"k{i:02d}": "v" for i in range(params["metadata_max_keys"] + 1)}))
    out.append(with_(metadata={f"k{i:02d}": "v" for i in range(params["metadata_max_keys"])}))  # valid
    out.append(with_(metadata={"": "v"}))
    out.append(with_(metadata={"order": 17}))
    out.append(with_(metadata={"z" * 41: "v"}))
    out.append(with_(metadata={"b": "x" * 501, "a": 5}))
    out.append(with_(shipping="express"))
    out.append(with_(zeta=1, amount=_DROP))  # unknown field reported before missing amount
    out.append(with_(amount=_DROP, currency="EURO"))  # amount first
    out.append(with_(currency="USD", amount=10, customer="bad"))  # bound before customer
    out.append(with_(customer="bad", payment_method="bad"))
    out.append(with_(description=None, capture=None))  # null optionals: valid
    rng.shuffle(out)
    return out


_DROP = object()


# --------------------------------------------------------------------------------------
# Cases
# --------------------------------------------------------------------------------------
def _scenarios(rng, params, model):
    config, service_cls, _scan = model
    ttl = params["key_ttl_hours"] * HOUR
    lease = params["lock_lease_s"] * 1000
    m1, m2, m3 = _merchant(rng), _merchant(rng), _merchant(rng)
    c1, c2, c3 = _customer(rng), _customer(rng), _customer(rng)
    out = {}

    def new():
        return Log(service_cls, config, T0 + rng.randint(0, 10**9))

    # Same key, same body sent with its fields in another order: one payment, replayed.
    log = new()
    body = _body(rng, c1, "USD", extras=False)
    body["description"] = "order 4411"
    key = _key(rng)
    log.post(m1, body, key)
    log.tick(rng.randint(200, 5000))
    log.post(m1, dict(reversed(list(body.items()))), key)
    log.tick(1000)
    log.get(m1, "/v1/payments")
    out["idem_replay_same_body"] = log

    # Same key, another body: 422 mismatch (the first payment stands).
    log = new()
    body = _body(rng, c1, "EUR", extras=False)
    key = _key(rng)
    log.post(m1, body, key)
    log.tick(3000)
    log.post(m1, {**body, "amount": body["amount"] + 100}, key)
    log.tick(3000)
    log.post(m1, {**body, "currency": body["currency"].lower() if body["currency"].isupper() else body["currency"].upper()}, key)
    log.tick(1000)
    log.post(m1, body, key)
    out["idem_mismatch"] = log

    # A validation error is not stored: the corrected retry with the same key succeeds.
    log = new()
    key = _key(rng)
    good = _body(rng, c2, "GBP", extras=False)
    log.post(m1, {**good, "amount": 5}, key)
    log.tick(2000)
    log.post(m1, good, key)
    log.tick(2000)
    log.post(m1, good, key)
    key2 = _key(rng)
    log.tick(500)
    log.post(m1, "{\"amount\": 12", key2)
    log.tick(500)
    log.post(m1, _body(rng, c2, "EUR", extras=False), key2)
    out["idem_validation_not_stored"] = log

    # A decline is a result: it is stored and replayed, and the key is taken.
    log = new()
    key = _key(rng)
    declined = _body(rng, c1, "USD", method=rng.choice(DECLINES), extras=False)
    log.post(m2, declined, key)
    log.tick(4000)
    log.post(m2, declined, key)
    log.tick(4000)
    log.post(m2, {**declined, "payment_method": "pm_card_visa"}, key)
    log.tick(100)
    log.post(m2, {**declined, "payment_method": "pm_card_visa"}, _key(rng))
    out["idem_decline_stored"] = log

    # A crash leaves the key processing for the worker lease: 409 with Retry-After, then the
    # retry after the lease runs the request.
    log = new()
    key = _key(rng)
    body = _body(rng, c3, "CHF", extras=False)
    log.post(m1, body, key, fault="crash")
    log.tick(lease // 3 + 250)
    log.post(m1, body, key)
    log.tick(lease - lease // 3 - 250 - 1)
    log.post(m1, {**body, "amount": body["amount"] + 1}, key)
    log.tick(1)
    log.post(m1, body, key)
    log.tick(10)
    log.post(m1, body, key)
    out["idem_crash_lease"] = log

    # The key's life counts from the FIRST request (the crashed one), not from the retry.
    log = new()
    key = _key(rng)
    body = _body(rng, c1, "EUR", extras=False)
    log.post(m3, body, key, fault="crash")
    log.tick(lease + 30_000)
    log.post(m3, body, key)
    log.tick(ttl - lease - 30_000 - 60_000)
    log.post(m3, body, key)
    log.tick(90_000)
    log.post(m3, body, key)
    log.tick(1000)
    log.get(m3, "/v1/payments")
    out["idem_expiry_from_first_request"] = log

    # Replays do not extend the key: it expires ttl after the first request, exactly.
    log = new()
    key = _key(rng)
    body = _body(rng, c2, "USD", extras=False)
    log.post(m1, body, key)
    log.tick(ttl // 2)
    log.post(m1, body, key)
    log.tick(ttl // 2 - 1)
    log.post(m1, body, key)
    log.tick(1)
    log.post(m1, body, key)
    log.tick(1000)
    log.post(m1, body, key)
    out["idem_expiry_exact"] = log

    # Ledger numbers are drawn at authorisation: declines use one, replays, validation errors
    # and crashes before authorisation do not; one sequence across merchants.
    log = new()
    log.tick(1000 - log.now % 1000 + rng.randint(0, 300))
    log.post(m1, _body(rng, c1, "EUR", extras=False), _key(rng))
    log.tick(rng.randint(20, 150))
    key = _key(rng)
    declined = _body(rng, c1, "USD", method=rng.choice(DECLINES), extras=False)
    log.post(m1, declined, key)
    log.tick(rng.randint(20, 150))
    log.post(m2, _body(rng, c2, "EUR", method=rng.choice(DECLINES), extras=False))
    log.tick(rng.randint(20, 150))
    log.post(m1, _body(rng, c2, "GBP", extras=False))
    log.tick(rng.randint(20, 150))
    log.post(m1, declined, key)  # replayed, no number
    log.tick(rng.randint(20, 150))
    log.post(m1, {**declined, "amount": 3}, _key(rng))  # validation error, no number
    crash_key = _key(rng)
    crashed = _body(rng, c3, "CHF", extras=False)
    log.tick(rng.randint(20, 150))
    log.post(m1, crashed, crash_key, fault="crash")  # dies before authorisation, no number
    log.tick(rng.randint(20, 150))
    log.post(m2, _body(rng, c2, "USD", extras=False))
    log.tick(rng.randint(20, 150))
    log.post(m1, _body(rng, c1, "USD", method=rng.choice(DECLINES), extras=False), fault="timeout")
    log.tick(rng.randint(20, 150))
    log.post(m1, _body(rng, c1, "EUR", extras=False))
    log.tick(lease + 2000)
    log.post(m1, crashed, crash_key)
    log.tick(1000)
    log.get(m1, "/v1/payments")
    log.get(m2, "/v1/payments")
    out["ledger_numbers_after_declines"] = log

    # The store keeps record times in whole seconds (truncated): the lease and the key life end
    # on the whole second, and Retry-After counts from there.
    log = new()
    log.tick(1000 - log.now % 1000 + 900 + rng.randint(0, 80))
    key = _key(rng)
    body = _body(rng, c1, "EUR", extras=False)
    log.post(m1, body, key, fault="crash")
    log.tick(lease - 500)
    log.post(m1, body, key)  # past the stored lease, inside the millisecond one
    log.tick(1000 - log.now % 1000 + 800 + rng.randint(0, 100))
    key = _key(rng)
    body = _body(rng, c2, "USD", extras=False)
    log.post(m2, body, key, fault="crash")
    log.tick(10_500)
    log.post(m2, body, key)
    log.tick(rng.randint(1, 400))
    log.post(m2, body, key)
    log.tick(1000 - log.now % 1000 + 700 + rng.randint(0, 200))
    key = _key(rng)
    body = _body(rng, c3, "GBP", extras=False)
    log.post(m1, body, key)
    log.tick(ttl - 500)
    log.post(m1, body, key)  # the stored key life has ended
    log.tick(1000)
    log.post(m1, body, key)
    log.tick(1000)
    log.get(m1, "/v1/payments")
    out["idem_lease_store_seconds"] = log

    # Keys are per merchant.
    log = new()
    key = _key(rng)
    body = _body(rng, c1, "EUR", extras=False)
    log.post(m1, body, key)
    log.tick(700)
    log.post(m2, body, key)
    log.tick(700)
    log.post(m2, {**body, "amount": body["amount"] * 2}, key)
    log.tick(700)
    log.get(m2, "/v1/payments")
    out["idem_scope_per_merchant"] = log

    # A gateway timeout: the client saw 504, the payment committed and its 201 is stored.
    log = new()
    key = _key(rng)
    body = _body(rng, c2, "SEK", extras=False)
    log.post(m1, body, key, fault="timeout")
    log.tick(15_000)
    log.post(m1, body, key)
    log.tick(1000)
    log.post(m1, _body(rng, c2, "SEK", extras=False), fault="timeout")
    log.tick(1000)
    log.get(m1, "/v1/payments")
    out["idem_timeout_committed"] = log

    # Header names in any case; keys are case-sensitive values; no key = no idempotency.
    log = new()
    key = _key(rng)
    body = _body(rng, c1, "USD", extras=False)
    log.post(m1, body, key, header_style="lower")
    log.tick(100)
    log.post(m1, body, key, header_style="upper")
    log.tick(100)
    log.post(m1, body, key.upper())
    log.tick(100)
    log.post(m1, body)
    log.tick(100)
    log.post(m1, body)
    log.tick(100)
    log.get(m1, "/v1/payments", header_style="lower")
    out["headers_case_and_no_key"] = log

    # Bad requests before idempotency: auth, key format, JSON; none of them takes the key.
    log = new()
    key = _key(rng)
    body = _body(rng, c1, "EUR", extras=False)
    log.post(None, body, key)
    log.post(m1, body, "k" * 256)
    log.post(m1, body, "tab\there")
    log.post(m1, body, "")
    log.post(m1, "[1, 2]", key)
    log.post(m1, "not json", key)
    log.tick(10)
    log.post(m1, body, key)
    log.post(m1, body, "k" * 255)
    log.send({"method": "DELETE", "path": "/v1/payments", "headers": {"Merchant-Id": m1}})
    log.send({"method": "GET", "path": "/v1/refunds", "headers": {"Merchant-Id": m1}})
    log.send({"method": "POST", "path": "/v1/payments/pay_00000000", "headers": {"Merchant-Id": m1}, "body": "{}"})
    log.get(None, "/v1/payments")
    out["requests_rejected_early"] = log

    # Validation table: every rule, one body each.
    invalid = _invalid_bodies(rng, c1, params)
    half = len(invalid) // 2
    for index, chunk in enumerate((invalid[:half], invalid[half:])):
        log = new()
        for body in chunk:
            log.tick(rng.randint(10, 900))
            log.post(m1, body, _key(rng) if rng.random() < 0.5 else None)
        out[f"validation_rules_{index + 1}"] = log

    # Pagination: new payments arrive between pages; the cursor keeps its place.
    log = new()
    for _ in range(7):
        log.tick(rng.randint(1000, 3000))
        log.post(m1, _body(rng, rng.choice([c1, c2]), "EUR"))
    log.tick(1000)
    page = log.get(m1, "/v1/payments?limit=3")
    for _ in range(3):
        log.tick(1500)
        log.post(m1, _body(rng, c1, "USD"))
    while page["body"].get("next_cursor"):
        log.tick(500)
        page = log.get(m1, f"/v1/payments?limit=3&cursor={page['body']['next_cursor']}")
    out["pagination_inserts_between_pages"] = log

    # Many payments in the same second: ties broken by id, descending.
    log = new()
    log.tick(1000 - log.now % 1000)
    for _ in range(9):
        log.tick(rng.randint(1, 80))
        log.post(m2, _body(rng, c1, "USD", extras=False))
    log.tick(1000)
    page = log.get(m2, "/v1/payments?limit=4")
    log.tick(10)
    log.get(m2, f"/v1/payments?cursor={page['body']['next_cursor']}&limit=4")
    out["pagination_same_second_ties"] = log

    # Limits: default, clamped, rejected.
    log = new()
    count = params["max_limit"] + 7
    for _ in range(count):
        log.tick(rng.randint(300, 2500))
        log.post(m1, _body(rng, rng.choice([c1, c2, c3]), "EUR", extras=False))
    log.tick(1000)
    log.get(m1, "/v1/payments")
    log.get(m1, f"/v1/payments?limit={params['max_limit'] + 50}")
    log.get(m1, "/v1/payments?limit=0")
    log.get(m1, "/v1/payments?limit=-3")
    log.get(m1, "/v1/payments?limit=ten")
    log.get(m1, "/v1/payments?limit=1")
    log.get(m2, "/v1/payments")
    out["pagination_limits"] = log

    # Filters, alone and together, with a page chain and the created_at range.
    log = new()
    for _ in range(30):
        log.tick(rng.randint(400, 40_000))
        body = _body(rng, rng.choice([c1, c2, c3]), rng.choice(CURRENCIES), extras=False)
        body["capture"] = rng.random() < 0.6
        log.post(m1, body)
    log.tick(1000)
    mid = (log.requests[8]["at"] // 1000, log.requests[22]["at"] // 1000)
    page = log.get(m1, f"/v1/payments?customer={c1}&limit=3")
    while page["body"].get("next_cursor"):
        page = log.get(m1, f"/v1/payments?customer={c1}&limit=3&cursor={page['body']['next_cursor']}")
    log.get(m1, "/v1/payments?status=requires_capture&limit=5")
    log.get(m1, f"/v1/payments?status=succeeded&customer={c2}")
    log.get(m1, f"/v1/payments?created_gte={mid[0]}&created_lt={mid[1]}")
    log.get(m1, f"/v1/payments?created_lt={mid[0]}&limit=2")
    log.get(m1, f"/v1/payments?customer={c3}&status=requires_capture&created_gte={mid[0]}")
    out["pagination_filters"] = log

    # Bad list parameters.
    log = new()
    for _ in range(4):
        log.tick(1000)
        log.post(m1, _body(rng, c1, "EUR", extras=False))
    log.tick(1000)
    log.get(m1, "/v1/payments?cursor=bm9wZQ")
    log.get(m1, "/v1/payments?cursor=%%%")
    log.get(m1, "/v1/payments?status=failed")
    log.get(m1, "/v1/payments?customer=bob")
    log.get(m1, "/v1/payments?created_gte=yesterday")
    log.get(m1, "/v1/payments?offset=2")
    log.get(m1, "/v1/payments?limit=2&limit=3")
    log.get(m1, "/v1/payments?page=2&status=nope")
    log.get(m1, "/v1/payments?limit=2")
    out["pagination_bad_parameters"] = log

    # Retrieve: own payment, other merchant's, unknown; currency upper-cased in the record.
    log = new()
    first = log.post(m1, {**_body(rng, c1, "EUR", extras=False), "currency": "eur"})
    log.tick(100)
    other = log.post(m2, _body(rng, c2, "usd", extras=False))
    log.tick(100)
    log.get(m1, "/v1/payments/" + first["body"]["id"])
    log.get(m1, "/v1/payments/" + other["body"]["id"])
    log.get(m2, "/v1/payments/" + other["body"]["id"])
    log.get(m1, "/v1/payments/pay_zzzzzzzz")
    out["retrieve_scoped"] = log
    return out


def _random_log(rng, params, model, size):
    config, service_cls, _scan = model
    log = Log(service_cls, config, T0 + rng.randint(0, 10**9))
    _drive(rng, params, log, size, merchants=2, customers=3, list_share=0.3)
    return log


def _portable_invalid(rng, customer):
    """The invalid bodies whose verdict is the same under every choice of the config's
    description and metadata limits (the busy-hour log is replayed under any of them)."""
    lowest = {"description_max_length": 350, "metadata_max_keys": 10}
    highest = {"description_max_length": 500, "metadata_max_keys": 20}
    kept = [b for b in _invalid_bodies(rng, customer, lowest)
            if len(b.get("description") or "") != 351 and len(b.get("metadata") or []) != 11]
    kept += [b for b in _invalid_bodies(rng, customer, highest)
             if len(b.get("description") or "") == 501 or len(b.get("metadata") or []) == 21]
    return kept


def _drive(rng, params, log, size, merchants, customers, list_share, portable=False):
    """A realistic mixed workload: creates with and without keys, retries, mismatches,
    validation errors and corrected retries, declines, crashes, timeouts, list page chains.

    portable: every response's status, every payment and every page are the same under every
    choice of the template's settings (lease, limits, field limits), so the log can be drawn
    once and replayed under any instance's config with its cursors still the next_cursor of
    the page before: waits after a crash stay clear of every lease choice, a crashed key is
    not reused later, every list names its limit (at most the smallest max_limit), and no
    body sits between two field-limit choices."""
    lease = params["lock_lease_s"] * 1000
    accounts = [_merchant(rng) for _ in range(merchants)]
    people = {m: [_customer(rng) for _ in range(customers)] for m in accounts}
    sent: list[tuple[str, str, dict]] = []  # (merchant, key, body) of earlier keyed posts
    chains: list[tuple[str, str, str]] = []  # (merchant, query, cursor) of pages to continue
    if portable:
        invalid = _portable_invalid(rng, "cus_" + "A1b2C3d4E5")
        waits = [0, 1, 3, 40, 250, 900, 2000, 15_000, 20_000, 95_000]
        limits = [1, 2, 3, 5, 10, 25, 50]
    else:
        invalid = _invalid_bodies(rng, "cus_" + "A1b2C3d4E5", params)
        waits = [0, 1, 3, 40, 250, 900, 2000, 15_000, lease // 2, lease + 1000]
        limits = [1, 2, 3, 5, 10, params["max_limit"] + 1]
    while len(log.requests) < size:
        log.tick(rng.choice(waits))
        merchant = rng.choice(accounts)
        roll = rng.random()
        if roll < list_share:
            if chains and rng.random() < 0.6:
                merchant_, query, cursor = chains.pop(rng.randrange(len(chains)))
                page = log.get(merchant_, f"/v1/payments?{query}&cursor={cursor}" if query else f"/v1/payments?cursor={cursor}")
            else:
                parts = []
                if rng.random() < 0.5:
                    parts.append(f"customer={rng.choice(people[merchant])}")
                if rng.random() < 0.25:
                    parts.append(f"status={rng.choice(['succeeded', 'requires_capture'])}")
                if portable or rng.random() < 0.4:
                    parts.append(f"limit={rng.choice(limits)}")
                rng.shuffle(parts)
                query = "&".join(parts)
                merchant_ = merchant
                page = log.get(merchant, "/v1/payments" + ("?" + query if query else ""))
            cursor = page["body"].get("next_cursor") if page["status"] == 200 else None
            if cursor:
                chains.append((merchant_, query, cursor))
            continue
        if sent and roll < list_share + 0.12:
            merchant_, key, body = rng.choice(sent)
            choice = rng.random()
            if choice < 0.6:
                log.post(merchant_, body, key, order=rng)
            elif choice < 0.8:
                log.post(merchant_, {**body, "amount": body["amount"] + 1}, key)
            else:
                log.post(rng.choice(accounts), body, key)
            continue
        if roll < list_share + 0.17:
            body = dict(rng.choice(invalid))
            key = _key(rng)
            log.post(merchant, body, key)
            if rng.random() < 0.6:
                log.tick(rng.randint(1, 5000))
                good = _body(rng, rng.choice(people[merchant]))
                log.post(merchant, good, key)
                sent.append((merchant, key, good))
            continue
        method = rng.choice(DECLINES) if rng.random() < 0.12 else None
        body = _body(rng, rng.choice(people[merchant]), method=method)
        fault = None
        if rng.random() < 0.1:
            fault = rng.choice(["crash", "crash", "timeout"])
        key = _key(rng) if rng.random() < 0.75 else None
        log.post(merchant, body, key, fault=fault)
        if key is not None:
            if not (portable and fault == "crash"):
                sent.append((merchant, key, body))
            if len(sent) > 400:
                sent.pop(0)
            if fault == "crash" and rng.random() < 0.7:  # the client retries soon after the 500
                if portable:
                    log.tick(rng.randint(200, 28_000) if rng.random() < 0.5 else rng.randint(91_000, 99_000))
                elif rng.random() < 0.5:
                    log.tick(rng.randint(200, lease - 2000))
                else:
                    log.tick(rng.randint(lease - 1000, lease + 200))
                log.post(merchant, body, key, order=rng)
    return log


def _check_portable(log, responses):
    """The busy-hour log replayed under an instance's settings must match its fixed-settings
    draw in every status, payment and page (only Retry-After on a 409 may differ)."""
    for index, (drawn, now) in enumerate(zip(log.responses, responses)):
        same = drawn["status"] == now["status"]
        if same and (log.requests[index]["method"] == "GET" or now["status"] in (201, 402)):
            same = json.dumps(drawn["body"], sort_keys=True) == json.dumps(now["body"], sort_keys=True)
        if not same:
            raise AssertionError(f"the busy-hour log is not portable: response {index} depends on the settings")


def _case(name, category, log, keep_arg, visible=False, keep=None):
    kwargs = {} if keep is None else {keep_arg: keep}
    return {"name": name, "kind": "functional", "category": category, "args": [log.requests],
            "kwargs": kwargs, "expected": None, "visible": visible, "_log": log}


def generate(params, names, rng, perf_rng):
    model = _model(params, names)
    config, service_cls, scan_cls = model
    keep_arg = names["keep_arg"]
    cases = []

    # Visible: ordinary creates, a retrieve and a first page (no keys reused, no ties).
    log = Log(service_cls, config, T0 + rng.randint(0, 10**8))
    m = _merchant(rng)
    customers = [_customer(rng), _customer(rng)]
    for index in range(3):
        log.tick(rng.randint(2000, 9000))
        log.post(m, _body(rng, customers[index % 2], rng.choice(["USD", "EUR"]), extras=False), _key(rng))
    log.tick(1000)
    log.get(m, "/v1/payments")
    cases.append(_case("visible_create_and_list", "example", log, keep_arg, visible=True))
    log = Log(service_cls, config, T0 + rng.randint(0, 10**8))
    created = log.post(m, {**_body(rng, customers[0], "GBP", extras=False), "description": "basket 2231"})
    log.tick(5000)
    log.post(m, {"amount": 900, "currency": "GBP", "payment_method": "pm_card_visa"})
    log.tick(5000)
    log.get(m, "/v1/payments/" + created["body"]["id"])
    cases.append(_case("visible_retrieve_and_missing_field", "example", log, keep_arg, visible=True))

    for name, log in _scenarios(rng, params, model).items():
        cases.append(_case(name, "rule", log, keep_arg))
    for index in range(5):
        log = _random_log(rng, params, model, rng.randint(60, 140))
        cases.append(_case(f"random_mixed_{index + 1}", "random", log, keep_arg))
    log = _random_log(rng, params, model, 120)
    cases.append(_case("random_mixed_kept", "random", log, keep_arg, keep=sorted(rng.sample(range(120), 25))))

    out = []
    for case in cases:
        log = case.pop("_log")
        expected = json.loads(json.dumps(log.responses))  # the live replay
        if expected != _replay(scan_cls, config, log.requests):
            raise AssertionError(f"model and brute force disagree on {case['name']}")
        keep = case["kwargs"].get(keep_arg)
        case["expected"] = expected if keep is None else [expected[i] for i in keep]
        out.append(case)

    # Performance: a busy hour of three merchants, many list pages. The log is drawn under
    # fixed settings (so that it depends on perf_requests only) as a portable log, then
    # replayed under this instance's settings: the same statuses, payments and pages, so
    # every cursor in it is still the next_cursor of the page it continues.
    fixed = {**params, **PERF_SETTINGS}
    _config0, service0, _scan0 = _model(fixed, names)
    log = Log(service0, _config0, T0)
    _drive(perf_rng, fixed, log, params["perf_requests"], merchants=3, customers=40, list_share=0.45,
           portable=True)
    total = len(log.requests)
    pages = [i for i, r in enumerate(log.requests) if r["method"] == "GET"]
    keep = sorted(set(perf_rng.sample(range(total), 150)) | set(perf_rng.sample(pages, 20)) | {total - 1})
    service = service_cls(config)
    responses = [service.handle(request) for request in log.requests]
    _check_portable(log, responses)
    out.append({"name": "scale_busy_hour", "kind": "performance", "category": "scale",
                "args": [log.requests, keep], "kwargs": {},  # positional: names must not matter
                "expected": json.loads(json.dumps([responses[i] for i in keep]))})
    return {
        "task_data": {
            "input": {"log": out[0]["args"][0]},
            "expected_output": out[0]["expected"],
        },
        "cases": out,
    }


def compare(expected, actual):
    """Responses must match field by field, except the human-readable error messages."""
    if not isinstance(actual, list):
        return False, "the replay must return a list of responses"
    if len(actual) != len(expected):
        return False, f"returned {len(actual)} responses, expected a different number"
    for index, (want, got) in enumerate(zip(expected, actual)):
        if not isinstance(got, dict):
            return False, f"response {index} is not a dict"
        for part in ("status", "headers", "body"):
            if part not in got:
                return False, f"response {index} has no {part!r}"
        if got["status"] != want["status"]:
            return False, f"response {index}: wrong status"
        if got["headers"] != want["headers"]:
            return False, f"response {index}: wrong headers"
        if _strip(got["body"]) != _strip(want["body"]):
            return False, f"response {index} (status {want['status']}): wrong body"
    return True, "ok"


def _strip(body):
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        return {"error": {k: v for k, v in body["error"].items() if k != "message"}}
    return body
