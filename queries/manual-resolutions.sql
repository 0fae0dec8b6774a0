-- name: manual-resolutions
-- description: Every transition a human operator made (actor operator:<id>), with the operator and the
--   recorded reason.
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
)
SELECT
  transition_at,
  dedupe_key,
  event_id,
  channel,
  from_state,
  to_state,
  substr(actor, 10) AS operator,
  reason,
  version
FROM unique_transitions
WHERE actor LIKE 'operator:%'
ORDER BY transition_at_ms, dedupe_key, version
