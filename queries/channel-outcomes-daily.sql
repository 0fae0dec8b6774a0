-- name: channel-outcomes-daily
-- description: Terminal outcomes per channel per day (transitions into a terminal state, counted on the
--   day they happened).
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
  dt AS day,
  channel,
  to_state AS outcome,
  count(*) AS notifications
FROM unique_transitions
WHERE to_state IN (
  'accepted', 'rejected', 'expired', 'suppressed', 'blocked', 'invalid',
  'resolved_accepted', 'resolved_rejected', 'superseded', 'cancelled'
)
  -- an annotation (a fact recorded in the same state, e.g. cancel_too_late) is not a second outcome
  AND (from_state IS NULL OR from_state <> to_state)
GROUP BY dt, channel, to_state
ORDER BY day, channel, outcome
