// Webhook delivery (decisions.md sections 7 and 8; the design is in docs/webhooks.md). The outbox
// is the source: each enabled endpoint keeps a cursor over its user's seqs, and a fan-out pass
// turns the events past it into pending deliveries and moves it, in one transaction, so an event
// is queued exactly once however many dispatchers run. Deliveries are claimed by leasing their
// endpoint (one attempt in flight per endpoint keeps seq order); an attempt's outcome, the log
// entry, the next retry or the removal are written together. A dispatcher that dies mid-attempt
// leaves its lease to expire: the delivery is then attempted again, never dropped. Fairness: a
// dispatcher holds at most `maxPerUser` attempts of one user's endpoints, and failing endpoints
// at most half its slots, so receivers that never answer cannot take the slots of healthy ones.
import type { Config } from '../config';
import type { Database, Queryable } from '../db/pool';
import { toDelivered, type StoredEvent } from '../events/outbox';
import type { Logger } from '../telemetry/log';
import type { AppEnv, Resolve } from './address';
import { resolveAll } from './address';
import { ATTEMPT_TIMEOUT_MS, sendWebhook, succeeded, type AttemptResult } from './send';

/** Endpoints fanned out, and events per endpoint, in one pass. */
const FAN_OUT_ENDPOINTS = 100;
const FAN_OUT_EVENTS = 500;
/**
 * Attempts in flight per dispatcher. A slow receiver holds one slot for at most the timeout, and
 * an attempt in flight costs an idle socket and at most MAX_RESPONSE_BYTES: slots are cheap, so
 * there are enough that the per-user cap and the failing share leave most of them to healthy
 * endpoints whoever else hangs.
 */
export const DISPATCH_CONCURRENCY = 256;
/** Default attempts of one user's endpoints in flight per dispatcher (WEBHOOK_MAX_IN_FLIGHT_PER_USER). */
export const MAX_IN_FLIGHT_PER_USER = 8;
/** Failing endpoints (their last attempt failed) hold at most this share of a dispatcher's slots. */
const FAILING_SHARE = 0.5;
/** An endpoint's lease outlives its attempt (the timeout) with room to write the outcome. */
const LEASE_SECONDS = 60;

/** Event types never sent to webhooks. */
const NOT_FOR_WEBHOOKS = new Set(['AudioStoredProgressEvent']);

interface FanOutEndpoint {
  id: string;
  user_id: string;
  cursor_seq: number;
  event_types: string[];
}

/** Queues every event past the cursors of up to FAN_OUT_ENDPOINTS endpoints; returns how many were queued. */
export async function fanOut(db: Database): Promise<number> {
  return db.withTransaction(async (tx) => {
    // FOR UPDATE: a concurrent pass skips these endpoints, and a cursor moved meanwhile is re-read.
    // guard: fan-out-endpoint-lock | remove: FOR UPDATE SKIP LOCKED | test: test/concurrency/webhooks.test.ts :: never move a cursor back
    const { rows: hooks } = await tx.query<FanOutEndpoint>(
      'webhook.fan_out_endpoints',
      `SELECT id, user_id, cursor_seq, event_types FROM webhook w
       WHERE enabled AND EXISTS (SELECT 1 FROM event_outbox e WHERE e.user_id = w.user_id AND e.seq > w.cursor_seq)
       LIMIT $1 FOR UPDATE SKIP LOCKED`,
      [FAN_OUT_ENDPOINTS],
    );
    if (!hooks.length) return 0;
    const { rows: events } = await tx.query<{
      webhook_id: string;
      id: string;
      user_id: string;
      seq: number;
      payload: StoredEvent['body'];
      created_at: string;
    }>(
      'webhook.fan_out_events',
      `SELECT h.id AS webhook_id, e.id, e.user_id, e.seq, e.payload, e.created_at
       FROM unnest($1::uuid[], $2::uuid[], $3::bigint[]) AS h(id, user_id, cursor_seq)
       CROSS JOIN LATERAL (SELECT * FROM event_outbox e WHERE e.user_id = h.user_id AND e.seq > h.cursor_seq ORDER BY e.seq LIMIT $4) e`,
      [hooks.map((h) => h.id), hooks.map((h) => h.user_id), hooks.map((h) => h.cursor_seq), FAN_OUT_EVENTS],
    );
    const byId = new Map(hooks.map((h) => [h.id, h]));
    const cursors = new Map<string, number>();
    const queued = events.filter((e) => {
      cursors.set(e.webhook_id, Math.max(cursors.get(e.webhook_id) ?? 0, e.seq));
      const types = byId.get(e.webhook_id)!.event_types;
      return !NOT_FOR_WEBHOOKS.has(e.payload.type) && (types.includes('*') || types.includes(e.payload.type));
    });
    const bodies = queued.map((e) =>
      JSON.stringify(
        toDelivered({
          event_id: e.id,
          seq: e.seq,
          occurred_at: e.created_at,
          user_id: e.user_id,
          body: e.payload,
          origin_client_id: null,
          trace_context: null,
        }),
      ),
    );
    await tx.query(
      'webhook.fan_out_queue',
      `INSERT INTO webhook_delivery (webhook_id, event_id, seq, body)
       SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::bigint[], $4::text[]) ON CONFLICT DO NOTHING`,
      [queued.map((e) => e.webhook_id), queued.map((e) => e.id), queued.map((e) => e.seq), bodies],
    );
    await tx.query(
      'webhook.fan_out_cursor',
      'UPDATE webhook w SET cursor_seq = c.seq FROM unnest($1::uuid[], $2::bigint[]) AS c(id, seq) WHERE w.id = c.id',
      [[...cursors.keys()], [...cursors.values()]],
    );
    return queued.length;
  });
}

export interface Claim {
  webhook_id: string;
  user_id: string;
  url: string;
  /** The secrets to sign with: the current one, then the previous one while its overlap lasts. */
  secrets: string[];
  /** The endpoint's last attempt failed (it counts against the failing share). */
  failing: boolean;
  event_id: string;
  body: string;
  attempts: number;
}

/** What this dispatcher already holds: attempts in flight per user, and room left for failing endpoints. */
export interface Fairness {
  maxPerUser: number;
  inFlightByUser: ReadonlyMap<string, number>;
  failingRoom: number;
}

const UNLIMITED: Fairness = { maxPerUser: 2 ** 31 - 1, inFlightByUser: new Map(), failingRoom: 2 ** 31 - 1 };

/**
 * Leases up to `limit` endpoints with a delivery due and returns the lowest-seq due delivery of
 * each. The lease is on the endpoint row: a concurrent claim re-reads it under FOR UPDATE and
 * skips it, so no two dispatchers attempt the same endpoint at once. A release leaves the time
 * in lease_until, so the least recently served endpoints are claimed first (round robin), within
 * `fair`: no user past maxPerUser attempts in flight here, no more failing endpoints than failingRoom.
 */
export async function claimDue(
  db: Queryable,
  limit: number,
  leaseSeconds = LEASE_SECONDS,
  fair: Fairness = UNLIMITED,
): Promise<Claim[]> {
  // A claimed endpoint's row stays locked until its lease is written: another claim skips it.
  // Fairness: a user's endpoints get the slots left of maxPerUser; failing ones those left of failingRoom.
  const { rows } = await db.query<Claim>(
    'webhook.claim',
    `WITH busy AS (
       SELECT * FROM unnest($3::uuid[], $4::int[]) AS b(user_id, n)
     ), due AS (
       SELECT w.id, w.lease_until, w.failing_since IS NOT NULL AS failing,
              COALESCE(b.n, 0) + row_number() OVER (PARTITION BY w.user_id ORDER BY w.lease_until NULLS FIRST, w.id) AS user_slot
       FROM webhook w LEFT JOIN busy b ON b.user_id = w.user_id
       WHERE w.enabled AND (w.lease_until IS NULL OR w.lease_until < now())
         AND EXISTS (SELECT 1 FROM webhook_delivery d WHERE d.webhook_id = w.id AND d.next_attempt_at <= now())
     ), fair AS (
       SELECT id, lease_until,
              CASE WHEN failing THEN row_number() OVER (PARTITION BY failing ORDER BY lease_until NULLS FIRST, id) ELSE 0 END AS failing_slot
       -- guard: webhook-per-user-cap | remove: WHERE user_slot <= $5 | test: test/webhooks/delivery.test.ts :: maxPerUser attempts of one user
       FROM due WHERE user_slot <= $5
     ), picked AS (
       -- guard: webhook-failing-share | remove: WHERE failing_slot <= $6 | test: test/webhooks/delivery.test.ts :: failing endpoints at most half
       SELECT id FROM fair WHERE failing_slot <= $6 ORDER BY lease_until NULLS FIRST, id LIMIT $1
     ), hooks AS (
       SELECT id FROM webhook w
       WHERE id IN (SELECT id FROM picked)
         AND enabled AND (lease_until IS NULL OR lease_until < now())
       -- guard: claim-endpoint-lock | remove: FOR UPDATE SKIP LOCKED | test: test/concurrency/webhooks.test.ts :: leased while the claim looked
       FOR UPDATE SKIP LOCKED
     ), leased AS (
       UPDATE webhook w SET lease_until = now() + make_interval(secs => $2) FROM hooks h WHERE w.id = h.id
       RETURNING w.id, w.user_id, w.url, w.failing_since IS NOT NULL AS failing,
         CASE WHEN w.previous_secret_expires_at > now() THEN ARRAY[w.secret, w.previous_secret] ELSE ARRAY[w.secret] END AS secrets
     )
     SELECT l.id AS webhook_id, l.user_id, l.url, l.secrets, l.failing, d.event_id, d.body, d.attempts FROM leased l
     CROSS JOIN LATERAL (
       SELECT event_id, body, attempts FROM webhook_delivery d
       WHERE d.webhook_id = l.id AND d.next_attempt_at <= now() ORDER BY d.seq, d.event_id LIMIT 1
     ) d`,
    [
      limit,
      leaseSeconds,
      [...fair.inFlightByUser.keys()],
      [...fair.inFlightByUser.values()],
      fair.maxPerUser,
      fair.failingRoom,
    ],
  );
  return rows;
}

export interface RetryRules {
  /** Seconds before each retry; once used up, the delivery is given up. */
  retrySchedule: number[];
  /** An endpoint whose attempts have all failed for this long is disabled. */
  disableAfterSeconds: number;
}

/**
 * Writes an attempt's outcome in one transaction: the log entry; on success the delivery goes,
 * otherwise it waits for its next retry (or goes when the schedule is used up) and the
 * endpoint's failing time starts or, past the limit, disables it. The lease is released.
 */
export async function recordAttempt(
  db: Database,
  claim: Claim,
  result: AttemptResult,
  rules: RetryRules,
): Promise<void> {
  const attempt = claim.attempts + 1;
  const ok = succeeded(result);
  const retryIn = ok ? undefined : rules.retrySchedule[attempt - 1];
  await db.withTransaction(async (tx) => {
    await tx.query(
      'webhook.attempt_log',
      `INSERT INTO webhook_attempt (webhook_id, event_id, attempt, status_code, error, duration_ms)
       SELECT $1, $2, $3, $4, $5, $6 WHERE EXISTS (SELECT 1 FROM webhook WHERE id = $1)`,
      [claim.webhook_id, claim.event_id, attempt, result.status_code, result.error, result.duration_ms],
    );
    if (retryIn === undefined) {
      await tx.query('webhook.delivery_done', 'DELETE FROM webhook_delivery WHERE webhook_id = $1 AND event_id = $2', [
        claim.webhook_id,
        claim.event_id,
      ]);
    } else {
      await tx.query(
        'webhook.delivery_retry',
        `UPDATE webhook_delivery SET attempts = $3, next_attempt_at = now() + make_interval(secs => $4)
         WHERE webhook_id = $1 AND event_id = $2`,
        [claim.webhook_id, claim.event_id, attempt, retryIn],
      );
    }
    await tx.query(
      'webhook.release',
      `UPDATE webhook SET lease_until = now(),
         failing_since = CASE WHEN $2 THEN NULL ELSE COALESCE(failing_since, now()) END,
         enabled = enabled AND ($2 OR failing_since IS NULL OR failing_since > now() - make_interval(secs => $3))
       WHERE id = $1`,
      [claim.webhook_id, ok, rules.disableAfterSeconds],
    );
  });
}

export interface DispatcherOptions extends RetryRules {
  db: Database;
  log: Logger;
  env: AppEnv;
  pollMs: number;
  resolve?: Resolve;
  timeoutMs?: number;
  concurrency?: number;
  /** Attempts of one user's endpoints in flight at once (WEBHOOK_MAX_IN_FLIGHT_PER_USER). */
  maxPerUser?: number;
}

export interface Dispatcher {
  /** Runs a pass now (fan-out, then claims for the free slots). */
  poke(): void;
  /** Stops claiming and waits for the attempts in flight. */
  stop(): Promise<void>;
}

/** The delivery loop: a pass every pollMs, and again whenever an attempt frees a slot. */
export function startDispatcher(opts: DispatcherOptions): Dispatcher {
  const { log } = opts;
  // Delivers every user's webhooks: the service's work, declared (issue 38); it runs in the live service.
  const db = opts.db.as({ service: 'live' });
  const concurrency = opts.concurrency ?? DISPATCH_CONCURRENCY;
  const maxPerUser = opts.maxPerUser ?? MAX_IN_FLIGHT_PER_USER;
  const failingSlots = Math.floor(concurrency * FAILING_SHARE);
  const inFlight = new Set<Promise<void>>();
  const inFlightByUser = new Map<string, number>();
  let failingInFlight = 0;
  const hold = (claim: Claim, n: 1 | -1) => {
    const count = (inFlightByUser.get(claim.user_id) ?? 0) + n;
    if (count) inFlightByUser.set(claim.user_id, count);
    else inFlightByUser.delete(claim.user_id);
    if (claim.failing) failingInFlight += n;
  };
  let running = false;
  let again = false;
  let stopped = false;

  const attemptOne = async (claim: Claim) => {
    const result = await sendWebhook(
      { url: claim.url, secrets: claim.secrets },
      { id: claim.event_id, body: claim.body },
      {
        env: opts.env,
        resolve: opts.resolve ?? resolveAll,
        timeoutMs: opts.timeoutMs ?? ATTEMPT_TIMEOUT_MS,
      },
    );
    await recordAttempt(db, claim, result, opts);
  };

  const pass = async () => {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    running = true;
    try {
      do {
        again = false;
        await fanOut(db);
        const free = concurrency - inFlight.size;
        if (free <= 0 || stopped) break;
        const fair = { maxPerUser, inFlightByUser, failingRoom: Math.max(0, failingSlots - failingInFlight) };
        for (const claim of await claimDue(db, free, LEASE_SECONDS, fair)) {
          hold(claim, 1);
          const p: Promise<void> = attemptOne(claim)
            .catch((err) =>
              log.warn(
                { err: String(err), webhook_id: claim.webhook_id },
                'webhook attempt not recorded; retried when its lease ends',
              ),
            )
            .finally(() => {
              hold(claim, -1);
              inFlight.delete(p);
              void pass();
            });
          inFlight.add(p);
        }
      } while (again && !stopped);
    } catch (err) {
      log.warn({ err: String(err) }, 'webhook dispatch pass failed; the next one retries');
    } finally {
      running = false;
    }
  };

  const timer = setInterval(() => void pass(), opts.pollMs);
  timer.unref();
  void pass();
  return {
    poke: () => void pass(),
    async stop() {
      stopped = true;
      clearInterval(timer);
      while (running || inFlight.size) await Promise.race([...inFlight, new Promise((r) => setTimeout(r, 10))]);
    },
  };
}

/** The dispatcher with the process's configuration (the live service's instances, the local stack). */
export function startWebhookDispatcher(
  rt: { config: Config; db: Database; log: Logger },
  overrides: Partial<DispatcherOptions> = {},
): Dispatcher {
  return startDispatcher({
    db: rt.db,
    log: rt.log,
    env: rt.config.APP_ENV,
    pollMs: rt.config.WEBHOOK_POLL_MS,
    maxPerUser: rt.config.WEBHOOK_MAX_IN_FLIGHT_PER_USER,
    retrySchedule: rt.config.WEBHOOK_RETRY_SCHEDULE_SECONDS,
    disableAfterSeconds: rt.config.WEBHOOK_DISABLE_AFTER_SECONDS,
    ...overrides,
  });
}
