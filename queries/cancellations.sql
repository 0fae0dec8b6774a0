-- name: cancellations
-- description: Who cancelled what, when, and which sends it stopped: every row moved to cancelled (by
--   the cancel command, by a dispatch whose marker read came before its provider call, or by the
--   provider's cancel route) and every cancel that came too late (cancel_too_late, with the handoff
--   time), per business event.
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
  event_id,
  dedupe_key,
  purpose,
  channel,
  recipient_ref,
  from_state,
  CASE WHEN to_state = 'cancelled' THEN 'stopped' ELSE 'too_late' END AS outcome,
  NULLIF(regexp_extract(reason, '^cancel(?:led|_too_late|_unconfirmed):([^:]+)', 1), '') AS cancel_scope,
  COALESCE(NULLIF(regexp_extract(reason, ':by=([a-z]+:[^:]+)', 1), ''), actor) AS cancelled_by,
  CASE
    WHEN to_state = 'cancelled' THEN NULLIF(regexp_extract(reason, ':by=[a-z]+:[^:]+:([a-z_]+)', 1), '')
    ELSE NULLIF(regexp_extract(reason, '^(cancel_[a-z_]+):', 1), '')
  END AS how,
  NULLIF(regexp_extract(reason, 'handoff=([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z)', 1), '') AS handed_off_at,
  actor,
  reason
FROM unique_transitions
WHERE (to_state = 'cancelled' OR reason LIKE 'cancel_too_late:%' OR reason LIKE 'cancel_unconfirmed:%')
ORDER BY transition_at_ms, dedupe_key, version
