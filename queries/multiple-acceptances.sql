-- name: multiple-acceptances
-- description: Logical messages (one dedupe key = one message on one channel) that a provider accepted
--   more than once in the day range, e.g. a row re-created after its TTL and sent again. Should always
--   be empty. An acceptance is a transition into accepted from another state (or a first line); an
--   accepted → accepted line is an annotation of the row (a fact or a cancel answer recorded on it) and
--   is no second acceptance unless it names another provider message id. So a message is listed when it
--   arrived in accepted twice, or its accepted lines carry two provider message ids.
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
  dedupe_key,
  min(event_id) AS event_id,
  min(channel) AS channel,
  greatest(
    count(*) FILTER (WHERE from_state IS NULL OR from_state <> 'accepted'),
    count(DISTINCT transport_message_id)
  ) AS acceptances,
  count(DISTINCT transport_message_id) AS distinct_message_ids,
  array_agg(transport_message_id ORDER BY transition_at_ms)
    FILTER (WHERE transport_message_id IS NOT NULL) AS message_ids,
  min(transition_at) AS first_accepted_at,
  max(transition_at) AS last_accepted_at
FROM unique_transitions
WHERE record_kind = 'delivery' AND to_state = 'accepted'
GROUP BY dedupe_key
HAVING count(*) FILTER (WHERE from_state IS NULL OR from_state <> 'accepted') > 1
  OR count(DISTINCT transport_message_id) > 1
ORDER BY dedupe_key
