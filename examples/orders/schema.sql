-- The orders example's tables. Names are unqualified: run this with search_path set to the schema they belong in.

-- Stock per SKU. `initial` is what the stock started at: the reconciler checks qty = initial + ledger.
-- The CHECK is the last word on overselling, should a bug ever skip the `qty >= $n` guard of the update.
CREATE TABLE stock (
  sku text PRIMARY KEY,
  qty int NOT NULL CHECK (qty >= 0),
  initial int NOT NULL
);

-- One row per order. The UNIQUE idempotency key is the layer that holds even when the lock does not:
-- a duplicate insert becomes a no-op (ON CONFLICT DO NOTHING) instead of a second order.
CREATE TABLE orders (
  id bigserial PRIMARY KEY,
  idempotency_key text NOT NULL UNIQUE,
  sku text NOT NULL REFERENCES stock (sku),
  qty int NOT NULL CHECK (qty > 0),
  fence bigint NOT NULL,
  status text NOT NULL DEFAULT 'placed' CHECK (status IN ('placed', 'cancelled')),
  created_at timestamptz NOT NULL DEFAULT now()
);

-- Every change of stock, with the order that made it: what the reconciler compares the orders and the stock with.
CREATE TABLE stock_ledger (
  id bigserial PRIMARY KEY,
  order_id bigint REFERENCES orders (id),
  sku text NOT NULL REFERENCES stock (sku),
  delta int NOT NULL,
  reason text NOT NULL,
  at timestamptz NOT NULL DEFAULT now()
);

-- What each reconciliation pass repaired, one row per repair.
CREATE TABLE reconciliation_log (
  id bigserial PRIMARY KEY,
  at timestamptz NOT NULL DEFAULT now(),
  kind text NOT NULL,
  detail text NOT NULL
);

-- The highest fence accepted per lock resource (fencelock/pg's fenceTableSql(), verbatim).
CREATE TABLE IF NOT EXISTS fencelock_fences (
  resource text PRIMARY KEY,
  fence bigint NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
);
