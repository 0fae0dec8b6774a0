-- name: manual-resolutions
-- description: Every transition a human operator made (actor operator:<id>), with the operator and the
--   recorded reason.
-- param: day_from string First day, YYYY-MM-DD (inclusive; prunes partitions)
-- param: day_to string Last day, YYYY-MM-DD (inclusive)
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
FROM transitions
WHERE dt BETWEEN ? AND ?
  AND actor LIKE 'operator:%'
ORDER BY transition_at_ms, dedupe_key, version
