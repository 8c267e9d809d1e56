// The events one connection receives: strictly in seq order, each once. Seqs are gapless per
// user and committed in order, so an event arriving past a gap (Pub/Sub delivered out of order,
// or a message is still on its way) means the missing ones are already in the outbox: they are
// read from there first. `last_seq` replay is the same read from the client's point on. Only
// retention deletes events, so a read that finds some gone sends ResyncRequired before going
// on. Events go through one queue, so live events arriving during a replay wait for it. Nothing is
// sent before open(): the connection's `ready` goes first, once start() fixed the starting point.
import { retry } from '@mi/lib/async';
import type { Queryable } from '@mi/lib/db/pool';
import { eventsAfter, listenFrom, toDelivered, type StoredEvent } from '@mi/lib/events/outbox';
import type { Logger } from '@mi/lib/telemetry/log';
import type { DeliveredEvent, OutgoingMessage } from './server-messages';

export interface EventSink {
  /** Sends one event to the client; false when the connection is gone. */
  send(message: OutgoingMessage): boolean;
  /** Resolves when the connection's send buffer has room (replays do not overrun it). */
  drained(): Promise<void>;
  /** Reading the outbox failed for good: the client must reconnect (and replay). */
  fail(): void;
}

const PAGE = 500;
const READ_ATTEMPTS = 4;
const READ_BACKOFF_MS = [200, 400, 800];

/** The WebSocket message of an event: the same JSON webhooks POST (lib/events/outbox.ts). */
export const toClientMessage: (e: StoredEvent) => DeliveredEvent = toDelivered;

export class EventStream {
  private lastSeq = 0;
  private closed = false;
  private queue: Promise<void> = Promise.resolve();
  private opened!: () => void;
  /** Held until open(): the queue waits here after the starting point is fixed. */
  private readonly gate = new Promise<void>((resolve) => (this.opened = resolve));

  constructor(
    private readonly db: Queryable,
    private readonly userId: string,
    private readonly clientId: string,
    private readonly sink: EventSink,
    private readonly log: Logger,
    /** At most this many events are replayed (or caught up) at once; beyond, ResyncRequired too_far_behind. */
    private readonly maxReplay: number,
  ) {}

  /**
   * Fixes the starting point: after `lastSeq` (the outbox's events after it are replayed once
   * opened) or after the latest event. Resolves once it is fixed (or the read failed for good:
   * then the sink was told). Events pushed meanwhile wait behind it, so an event committed after
   * this read reaches the connection, and one committed before is in the replay or was before.
   */
  start(lastSeq?: number): Promise<void> {
    let replayTo = 0;
    const fixed = this.enqueue(async () => {
      // Also bumps the user's routes version: publishers that commit later read presence again.
      const latest = await this.read(() => listenFrom(this.db, this.userId));
      if (lastSeq === undefined || lastSeq >= latest) {
        this.lastSeq = latest;
        return;
      }
      this.lastSeq = lastSeq;
      replayTo = latest;
    });
    this.queue = this.queue.then(() => this.gate);
    // The replay (nothing when replayTo is 0). Events retention deleted show as a gap where it starts: fill() reports it.
    void this.enqueue(() => this.fill(replayTo));
    return fixed;
  }

  /** Lets events out (after the connection sent `ready`). */
  open(): void {
    this.opened();
  }

  push(e: StoredEvent): void {
    if (e.user_id !== this.userId) return;
    void this.enqueue(async () => {
      if (e.seq <= this.lastSeq) return; // a duplicate (Pub/Sub redelivery, or local dispatch and its Pub/Sub copy)
      if (e.seq > this.lastSeq + 1) await this.fill(e.seq - 1);
      this.emit(e);
    });
  }

  /** Delivers from the outbox what Pub/Sub did not bring (yet) up to `latest`. */
  catchUp(latest: number): void {
    if (latest <= this.lastSeq) return;
    void this.enqueue(() => this.fill(latest));
  }

  close(): void {
    this.closed = true;
    this.opened();
  }

  private enqueue(step: () => Promise<void>): Promise<void> {
    this.queue = this.queue.then(async () => {
      if (this.closed) return;
      try {
        await step();
      } catch (err) {
        this.log.warn(
          { err: (err as Error).message, user_id: this.userId },
          'event delivery failed; asking the client to reconnect',
        );
        this.closed = true;
        this.sink.fail();
      }
    });
    return this.queue;
  }

  /**
   * Delivers the stored events after lastSeq up to `upTo`. Seqs have no gaps but what retention
   * deleted, so a read that does not begin at lastSeq + 1 found events gone (even if deleted
   * after an earlier check): the client gets ResyncRequired with the oldest kept seq first,
   * and nothing is skipped silently.
   */
  private async fill(upTo: number): Promise<void> {
    if (upTo - this.lastSeq > this.maxReplay) {
      // Too far behind: the client refetches what it shows instead, and events go on after upTo.
      if (!this.sink.send({ type: 'ResyncRequired', oldest_seq: upTo + 1, reason: 'too_far_behind' }))
        return void (this.closed = true);
      this.lastSeq = upTo;
      return;
    }
    while (this.lastSeq < upTo && !this.closed) {
      const from = this.lastSeq;
      // One page in memory at a time, and never more than maxReplay events.
      const batch = await this.read(() =>
        eventsAfter(this.db, this.userId, from, Math.min(PAGE, this.maxReplay, upTo - from)),
      );
      const next = batch[0]?.seq ?? upTo + 1;
      if (next > from + 1) {
        if (!this.sink.send({ type: 'ResyncRequired', oldest_seq: next })) return void (this.closed = true);
        this.lastSeq = next - 1;
      }
      for (const e of batch) if (e.seq <= upTo) this.emit(e);
      if (this.lastSeq < upTo) await this.sink.drained();
    }
  }

  private emit(e: StoredEvent): void {
    if (e.seq <= this.lastSeq || this.closed) return;
    this.lastSeq = e.seq;
    if (e.origin_client_id && e.origin_client_id === this.clientId) return; // echo suppression (X-Client-Id)
    if (!this.sink.send(toClientMessage(e))) this.closed = true;
  }

  private read<T>(fn: () => Promise<T>): Promise<T> {
    return retry(fn, { steps: READ_BACKOFF_MS, attempts: READ_ATTEMPTS });
  }
}
