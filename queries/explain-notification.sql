-- name: explain-notification
-- description: Full timeline of one notification: every transition of one dedupe key (or of every
--   channel of one business event), in order, with actor, reason, transport and transport message id.
-- param: key string Readable dedupe key, or a business event id (all channels of that event)
WITH wanted AS (SELECT ? AS k)
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
FROM transitions t
CROSS JOIN wanted w
WHERE t.dedupe_key = w.k OR t.event_id = w.k
ORDER BY t.transition_at_ms, t.dedupe_key, t.version, t.stream_sequence_number
