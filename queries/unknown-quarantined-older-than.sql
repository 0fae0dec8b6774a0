-- name: unknown-quarantined-older-than
-- description: Notifications whose latest state (within the day range) is unknown or quarantined and
--   whose last transition is older than a cut-off: what still waits for evidence or a human decision.
--   Start the range early enough to reach the oldest row that may still wait.
-- param: tenant string Tenant (the archive is partitioned by tenant; one tenant per query)
-- param: day_from string First day, YYYY-MM-DD (inclusive; prunes partitions)
-- param: day_to string Last day, YYYY-MM-DD (inclusive)
-- param: cutoff_ms bigint Epoch-ms cut-off; rows whose last transition is before it are returned
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
ranked AS (
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
  FROM unique_transitions
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
