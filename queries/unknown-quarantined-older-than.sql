-- name: unknown-quarantined-older-than
-- description: Notifications whose latest state is unknown or quarantined and whose last transition is
--   older than a cut-off: what still waits for evidence or a human decision.
-- param: cutoff_ms bigint Epoch-ms cut-off; rows whose last transition is before it are returned
WITH ranked AS (
  SELECT
    dedupe_key,
    event_id,
    tenant,
    purpose,
    channel,
    to_state,
    version,
    transition_at,
    transition_at_ms,
    actor,
    reason,
    transport,
    transport_message_id,
    row_number() OVER (PARTITION BY dedupe_key ORDER BY transition_at_ms DESC, version DESC) AS recency
  FROM transitions
)
SELECT
  dedupe_key,
  event_id,
  tenant,
  purpose,
  channel,
  to_state AS state,
  version,
  transition_at AS since,
  transition_at_ms AS since_ms,
  actor,
  reason,
  transport,
  transport_message_id
FROM ranked
WHERE recency = 1
  AND to_state IN ('unknown', 'quarantined')
  AND transition_at_ms < ?
ORDER BY transition_at_ms, dedupe_key
