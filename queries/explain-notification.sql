-- name: explain-notification
-- description: Full timeline of one notification: every transition of one dedupe key (or of every
--   channel of one business event), in order, with actor, reason, transport and transport message id.
-- param: tenant string Tenant (the archive is partitioned by tenant; one tenant per query)
-- param: day_from string First day, YYYY-MM-DD (inclusive; prunes partitions)
-- param: day_to string Last day, YYYY-MM-DD (inclusive)
-- param: key string Readable dedupe key, or a business event id (all channels of that event)
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
wanted AS (SELECT ? AS k)
SELECT
  t.dedupe_key,
  t.version,
  t.from_state,
  t.to_state,
  t.transition_at,
  t.transition_at_ms,
  t.actor,
  t.reason,
  t.transport,
  t.transport_message_id,
  t.attempt,
  t.purpose,
  t.policy_version,
  t.template_id,
  t.template_revision,
  t.content_hash,
  t.idempotency_key
FROM unique_transitions t
CROSS JOIN wanted w
WHERE t.dedupe_key = w.k OR t.event_id = w.k
ORDER BY t.transition_at_ms, t.dedupe_key, t.version, t.stream_sequence_number
