-- name: intent-to-accepted-latency
-- description: Latency from claim (version 1) to provider acceptance, per channel and purpose:
--   p50/p90/p99 and max in ms. Only notifications claimed and accepted inside the day range count.
--   approx_percentile is Trino's; the DuckDB runner defines a macro of that name (quantile_disc).
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
    min(transition_at_ms) FILTER (WHERE version = 1) AS claimed_at_ms,
    min(transition_at_ms) FILTER (WHERE to_state = 'accepted') AS accepted_at_ms
  FROM unique_transitions
  GROUP BY dedupe_key
)
SELECT
  channel,
  purpose,
  count(*) AS accepted,
  CAST(approx_percentile(accepted_at_ms - claimed_at_ms, 0.5) AS BIGINT) AS p50_ms,
  CAST(approx_percentile(accepted_at_ms - claimed_at_ms, 0.9) AS BIGINT) AS p90_ms,
  CAST(approx_percentile(accepted_at_ms - claimed_at_ms, 0.99) AS BIGINT) AS p99_ms,
  max(accepted_at_ms - claimed_at_ms) AS max_ms
FROM per_key
WHERE claimed_at_ms IS NOT NULL AND accepted_at_ms IS NOT NULL
GROUP BY channel, purpose
ORDER BY channel, purpose
