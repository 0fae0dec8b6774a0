-- name: latency-distribution
-- description: How long notifications took, per purpose and channel, as a histogram: from claim
--   (version 1, the ledger's clock) to the provider's acceptance (the ledger's clock) and to the first
--   delivery fact (the provider's clock: claim and delivery come from two clocks, so a few ms either way
--   are clock difference, not speed). Buckets are upper bounds in ms (le_ms); the last one is open.
-- param: tenant string Tenant (the archive is partitioned by tenant; one tenant per query)
-- param: day_from string First day, YYYY-MM-DD (inclusive; prunes partitions)
-- param: day_to string Last day, YYYY-MM-DD (inclusive)
WITH unique_transitions AS (
  -- One row per transition: a retried stream batch can store a transition twice (under two batch
  -- keys), and both copies carry the same dedupe_key, version, time and to_state (two delivery facts
  -- of one version in one millisecond differ in to_state: both stay). Prunes to one tenant, days.
  SELECT *
  FROM (
    SELECT
      *,
      row_number() OVER (
        PARTITION BY dedupe_key, version, transition_at_ms, to_state
        ORDER BY stream_sequence_number
      ) AS copy_number
    FROM transitions
    WHERE tenant = ? AND dt BETWEEN ? AND ?
  ) copies
  WHERE copy_number = 1
),
per_key AS (
  SELECT
    dedupe_key,
    min(channel) AS channel,
    min(purpose) AS purpose,
    min(transition_at_ms) FILTER (WHERE version = 1 AND record_kind <> 'delivery_fact') AS claimed_at_ms,
    min(transition_at_ms) FILTER (WHERE to_state = 'accepted') AS accepted_at_ms,
    min(transition_at_ms) FILTER (WHERE to_state = 'delivery:delivered') AS delivered_at_ms
  FROM unique_transitions
  GROUP BY dedupe_key
),
stages AS (
  SELECT purpose, channel, 'accepted' AS stage, accepted_at_ms - claimed_at_ms AS ms
  FROM per_key
  WHERE claimed_at_ms IS NOT NULL AND accepted_at_ms IS NOT NULL
  UNION ALL
  SELECT purpose, channel, 'delivered' AS stage, delivered_at_ms - claimed_at_ms AS ms
  FROM per_key
  WHERE claimed_at_ms IS NOT NULL AND delivered_at_ms IS NOT NULL
)
SELECT
  purpose,
  channel,
  stage,
  CASE
    WHEN ms <= 100 THEN 100
    WHEN ms <= 250 THEN 250
    WHEN ms <= 500 THEN 500
    WHEN ms <= 1000 THEN 1000
    WHEN ms <= 2500 THEN 2500
    WHEN ms <= 5000 THEN 5000
    WHEN ms <= 10000 THEN 10000
    WHEN ms <= 30000 THEN 30000
    WHEN ms <= 60000 THEN 60000
    ELSE -1
  END AS le_ms,
  count(*) AS notifications
FROM stages
GROUP BY 1, 2, 3, 4
ORDER BY 1, 2, 3, 4
