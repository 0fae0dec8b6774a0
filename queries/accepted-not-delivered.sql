-- name: accepted-not-delivered
-- description: Notifications the provider accepted before a cut-off with no delivery reported since:
--   no Delivery, TEXT_DELIVERED, complaint or engagement fact (bounced, failed, delayed, or silent).
--   latest_fact says which of these it is (null: the provider never reported anything after acceptance).
-- param: tenant string Tenant (the archive is partitioned by tenant; one tenant per query)
-- param: day_from string First day, YYYY-MM-DD (inclusive; prunes partitions)
-- param: day_to string Last day, YYYY-MM-DD (inclusive)
-- param: cutoff_ms bigint Epoch-ms cut-off (now minus N hours); acceptances before it are returned
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
accepted AS (
  SELECT
    dedupe_key,
    max(event_id) AS event_id,
    max(tenant) AS tenant,
    max(purpose) AS purpose,
    max(channel) AS channel,
    max(transport) AS transport,
    max(transport_message_id) AS transport_message_id,
    min(transition_at_ms) AS accepted_at_ms
  FROM unique_transitions
  WHERE record_kind = 'delivery' AND to_state IN ('accepted', 'resolved_accepted')
  GROUP BY dedupe_key
),
facts AS (
  SELECT
    dedupe_key,
    max(transition_at_ms) FILTER (
      WHERE to_state IN ('delivery:delivered', 'delivery:complained', 'delivery:engaged')
    ) AS delivered_at_ms,
    max_by(to_state, transition_at_ms) AS latest_fact,
    max_by(reason, transition_at_ms) AS latest_reason,
    max(transition_at_ms) AS latest_fact_at_ms
  FROM unique_transitions
  WHERE record_kind = 'delivery_fact'
  GROUP BY dedupe_key
)
SELECT
  a.dedupe_key,
  a.event_id,
  a.tenant,
  a.purpose,
  a.channel,
  a.transport,
  a.transport_message_id,
  a.accepted_at_ms,
  f.latest_fact,
  f.latest_reason,
  f.latest_fact_at_ms
FROM accepted a
LEFT JOIN facts f ON f.dedupe_key = a.dedupe_key
WHERE a.accepted_at_ms < ?
  AND f.delivered_at_ms IS NULL
ORDER BY a.accepted_at_ms, a.dedupe_key
