-- name: channel-outcomes-daily
-- description: Terminal outcomes per channel per day (transitions into a terminal state, counted on the
--   day they happened).
-- param: day_from string First day, YYYY-MM-DD (inclusive; prunes partitions)
-- param: day_to string Last day, YYYY-MM-DD (inclusive)
SELECT
  dt AS day,
  channel,
  to_state AS outcome,
  count(*) AS notifications
FROM transitions
WHERE dt BETWEEN ? AND ?
  AND to_state IN (
    'accepted', 'rejected', 'expired', 'suppressed', 'blocked', 'invalid',
    'resolved_accepted', 'resolved_rejected', 'superseded', 'cancelled'
  )
  -- an annotation (a fact recorded in the same state, e.g. cancel_too_late) is not a second outcome
  AND (from_state IS NULL OR from_state <> to_state)
GROUP BY dt, channel, to_state
ORDER BY day, channel, outcome
