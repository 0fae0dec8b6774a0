-- name: states-over-time
-- description: Transitions into each state per hour or per day (the ledger's clock), for a stacked chart
--   of what happened over time. Annotations (a fact recorded without a state change) and delivery facts
--   are not transitions and are not counted.
-- param: tenant string Tenant (the archive is partitioned by tenant; one tenant per query)
-- param: day_from string First day, YYYY-MM-DD (inclusive; prunes partitions)
-- param: day_to string Last day, YYYY-MM-DD (inclusive)
-- param: bucket string hour or day
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
)
SELECT
  CASE WHEN ? = 'hour' THEN substr(transition_at, 1, 13) || ':00Z' ELSE substr(transition_at, 1, 10) END AS bucket,
  to_state AS state,
  count(*) AS transitions
FROM unique_transitions
WHERE record_kind <> 'delivery_fact'
  AND (from_state IS NULL OR from_state <> to_state)
GROUP BY 1, 2
ORDER BY 1, 2
