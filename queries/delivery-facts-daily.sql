-- name: delivery-facts-daily
-- description: What providers reported after acceptance, per day (the provider's clock) and channel:
--   delivered, bounced (permanent or transient), complained, failed (rejected, carrier failed, validity
--   expired, refused by the provider's own suppression list). One count per fact recorded; a
--   notification can have several facts.
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
  substr(transition_at, 1, 10) AS day,
  channel,
  count(*) FILTER (WHERE to_state = 'delivery:delivered') AS delivered,
  count(*) FILTER (WHERE to_state IN ('delivery:bounced_permanent', 'delivery:bounced_transient')) AS bounced,
  count(*) FILTER (WHERE to_state = 'delivery:complained') AS complained,
  count(*) FILTER (
    WHERE to_state IN (
      'delivery:rejected', 'delivery:carrier_failed', 'delivery:ttl_expired', 'delivery:provider_suppressed'
    )
  ) AS failed
FROM unique_transitions
WHERE record_kind = 'delivery_fact'
GROUP BY 1, 2
ORDER BY 1, 2
