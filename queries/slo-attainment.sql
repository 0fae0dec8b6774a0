-- name: slo-attainment
-- description: Service level attainment of one purpose, per channel, for the messages (one ledger row
--   each) requested inside a window: the acceptance objective decided at each message's first arrival in
--   accepted, provider_scheduled, expired, quarantined, stalled, resolved_* or superseded (good: the
--   provider took it at most accept_within_ms after the request); the delivery objective decided by the
--   first delivered, complained, engaged, bounced_permanent, carrier_failed, ttl_expired, rejected or
--   provider_suppressed fact
--   (good: delivered at most deliver_within_ms after the request); and the duplicate budget, spent by
--   each dedupe key accepted more than once in the day range (the multiple-acceptances rule) that has a
--   message requested inside the window: start day_from before the window to look further back for the
--   first copy. A message is one lifetime of
--   a row: its dedupe key and the time it was requested (requested_at_ms, from archive schema 3 on). The
--   same rules make the stream metrics (lib/slo/observations.ts).
-- param: tenant string Tenant (the archive is partitioned by tenant; one tenant per query)
-- param: day_from string First day, YYYY-MM-DD (inclusive; the window's first day, or earlier to find older copies)
-- param: day_to string Last day, YYYY-MM-DD (inclusive; today, so late outcomes count)
-- param: purpose string Purpose whose objectives are measured
-- param: from_ms bigint Window start, epoch ms (inclusive): messages requested from then on
-- param: to_ms bigint Window end, epoch ms (exclusive)
-- param: accept_within_ms bigint The purpose's acceptance objective, ms
-- param: deliver_within_ms bigint The purpose's delivery objective, ms
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
params AS (
  SELECT ? AS purpose, ? AS from_ms, ? AS to_ms, ? AS accept_within_ms, ? AS deliver_within_ms
),
purpose_lines AS (
  SELECT
    t.*,
    t.requested_at_ms >= p.from_ms AND t.requested_at_ms < p.to_ms AS in_window
  FROM unique_transitions t
  CROSS JOIN params p
  WHERE t.purpose = p.purpose AND t.record_kind IN ('delivery', 'delivery_fact')
),
lines AS (
  SELECT * FROM purpose_lines WHERE in_window
),
acceptance AS (
  -- the first arrival (by version) in a state that decides the acceptance objective
  SELECT
    dedupe_key,
    requested_at_ms,
    min(channel) AS channel,
    min_by(to_state, version) AS decided_state,
    min_by(transition_at_ms, version) AS decided_at_ms
  FROM lines
  WHERE record_kind = 'delivery'
    AND (from_state IS NULL OR from_state <> to_state)
    AND to_state IN (
      'accepted', 'provider_scheduled', 'expired', 'quarantined', 'stalled',
      'resolved_accepted', 'resolved_rejected', 'superseded'
    )
  GROUP BY dedupe_key, requested_at_ms
),
delivery AS (
  -- the first fact that decides the delivery objective
  SELECT
    dedupe_key,
    requested_at_ms,
    min_by(to_state, transition_at_ms) AS decided_fact,
    min(transition_at_ms) AS decided_at_ms
  FROM lines
  WHERE record_kind = 'delivery_fact'
    AND to_state IN (
      'delivery:delivered', 'delivery:complained', 'delivery:engaged', 'delivery:bounced_permanent',
      'delivery:carrier_failed', 'delivery:ttl_expired', 'delivery:rejected', 'delivery:provider_suppressed'
    )
  GROUP BY dedupe_key, requested_at_ms
),
measured AS (
  SELECT
    a.channel,
    count(*) AS acceptance_decided,
    count(*) FILTER (
      WHERE a.decided_state IN ('accepted', 'provider_scheduled')
        AND a.decided_at_ms - a.requested_at_ms <= p.accept_within_ms
    ) AS acceptance_good,
    CAST(approx_percentile(
      CASE WHEN a.decided_state IN ('accepted', 'provider_scheduled') THEN a.decided_at_ms - a.requested_at_ms END,
      0.99
    ) AS BIGINT) AS accept_p99_ms,
    count(d.decided_fact) AS delivery_decided,
    count(*) FILTER (
      WHERE d.decided_fact IN ('delivery:delivered', 'delivery:complained', 'delivery:engaged')
        AND d.decided_at_ms - a.requested_at_ms <= p.deliver_within_ms
    ) AS delivery_good,
    count(*) FILTER (
      WHERE a.decided_state IN ('accepted', 'provider_scheduled') AND d.decided_fact IS NULL
    ) AS delivery_unreported
  FROM acceptance a
  CROSS JOIN params p
  LEFT JOIN delivery d ON d.dedupe_key = a.dedupe_key AND d.requested_at_ms = a.requested_at_ms
  GROUP BY a.channel
),
duplicates AS (
  -- the multiple-acceptances rule: a dedupe key accepted more than once spends the duplicate budget
  SELECT
    channel,
    count(*) AS accepted_messages,
    count(*) FILTER (WHERE acceptances > 1) AS duplicate_messages
  FROM (
    SELECT
      dedupe_key,
      min(channel) AS channel,
      count(*) AS acceptances,
      count(*) FILTER (WHERE in_window) AS acceptances_in_window
    FROM purpose_lines
    WHERE record_kind = 'delivery'
      AND to_state = 'accepted'
      AND (from_state IS NULL OR from_state <> to_state)
    GROUP BY dedupe_key
  ) keys
  WHERE acceptances_in_window > 0
  GROUP BY channel
)
SELECT
  m.channel,
  m.acceptance_decided,
  m.acceptance_good,
  m.accept_p99_ms,
  m.delivery_decided,
  m.delivery_good,
  m.delivery_unreported,
  COALESCE(u.accepted_messages, 0) AS accepted_messages,
  COALESCE(u.duplicate_messages, 0) AS duplicate_messages
FROM measured m
LEFT JOIN duplicates u ON u.channel = m.channel
ORDER BY m.channel
