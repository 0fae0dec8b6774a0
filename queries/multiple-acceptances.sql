-- name: multiple-acceptances
-- description: Logical messages (one dedupe key = one message on one channel) that a provider accepted
--   more than once, e.g. a row re-created after its TTL and sent again. Should always be empty.
SELECT
  dedupe_key,
  min(event_id) AS event_id,
  min(channel) AS channel,
  count(*) AS acceptances,
  count(DISTINCT transport_message_id) AS distinct_message_ids,
  array_agg(transport_message_id ORDER BY transition_at_ms) AS message_ids,
  min(transition_at) AS first_accepted_at,
  max(transition_at) AS last_accepted_at
FROM transitions
WHERE to_state = 'accepted'
GROUP BY dedupe_key
HAVING count(*) > 1
ORDER BY dedupe_key
