// Storing runs of frames: one object per run (create-only), then one segment_manifest row per
// run. Rows go in under the take's row lock after reading what is stored where the writer knows
// of nothing (its holes and past its highest stored frame), so writers of one take (a resumed
// take's old and new owner, a gap upload) never leave overlapping ranges: the later one learns
// what is there and writes the rest. A commit reads only rows new to its writer, however many
// rows the take has.
//
// Rows are committed by one SegmentCommitter per instance: requests that arrive while a
// transaction runs go together in the next one (group commit). An idle instance commits each
// request at once; a busy one needs a handful of statements per batch instead of per segment.
import type { Database, Queryable } from '@mi/lib/db/pool';
import type { Range } from '@mi/lib/domain/coverage';
import { segmentObjectName } from '@mi/lib/objects/take-objects';
import {
  insertManifestRows,
  rowsStartingIn,
  type ManifestInput,
  type ManifestRow,
} from '@mi/lib/repositories/manifest';
import { lockTakesForWrite, type RecordingState, type TakeKey } from '@mi/lib/repositories/recordings';
import { crc32cOf } from '@mi/lib/adapters/crc32c';
import { appendUserEvents, type EventBody, type StoredEvent } from '@mi/lib/events/outbox';
import type { Logger } from '@mi/lib/telemetry/log';
import { ObjectExistsError, type ObjectStore } from '@mi/lib/adapters/storage';
import type { Run } from './frames';
import { FRAME_MS } from './protocol';

/** Runs (objects) a recorder hands over at once. */
export const MAX_BATCH_RUNS = 8;
/** Requests committed in one transaction at most. */
const MAX_COMMIT_BATCH = 200;

export interface PreparedRun {
  run: Run;
  crc32c: string;
  byteCount: number;
  object: { name: string; generation: number; created: boolean };
}

export interface CommitRequest {
  take: TakeKey;
  userId: string;
  /**
   * Where the writer knows of no stored frame: its holes and [highest stored + 1, NO_END], each
   * starting at 0 or right after a stored frame. Its runs lie inside them.
   */
  unknown: readonly Range[];
  /** None: only the progress event (the interval's) is committed. */
  runs: PreparedRun[];
  /** The progress events due once these rows are in (the rows new to the writer, ours included). */
  progress(rows: ManifestRow[]): EventBody[];
}

export type SegmentOutcome =
  /**
   * The rows new to the writer (in its unknown ranges, ours included) and which runs are now
   * stored (ours, or an identical row). A run not stored overlapped rows someone else wrote
   * first: learn `rows`, write the rest.
   */
  | {
      kind: 'stored';
      rows: ManifestRow[];
      stored: Run[];
      owner: string | null;
      state: RecordingState;
      events: StoredEvent[];
    }
  /** The take is gone, finalizing or finalized: nothing can be added any more. */
  | { kind: 'closed' }
  /** A request without runs: its progress events. */
  | { kind: 'progress'; events: StoredEvent[] };

/** Writes the runs' objects (in parallel). */
export function prepareRuns(store: ObjectStore, take: TakeKey, runs: Run[]): Promise<PreparedRun[]> {
  return Promise.all(
    runs.map(async (run) => {
      const body = run.frames.length === 1 ? run.frames[0].bytes : Buffer.concat(run.frames.map((f) => f.bytes));
      const crc = crc32cOf(body);
      return {
        run,
        crc32c: crc,
        byteCount: body.length,
        object: await putObject(store, segmentObjectName(take, run.start, run.end), body, crc),
      };
    }),
  );
}

interface Pending {
  req: CommitRequest;
  resolve(o: SegmentOutcome): void;
  reject(err: unknown): void;
}

export class SegmentCommitter {
  private queue: Pending[] = [];
  private running = false;

  constructor(
    private readonly db: Database,
    private readonly store: ObjectStore,
    /** Committed events, all of a batch at once. */
    private readonly dispatch: (events: StoredEvent[]) => void,
    private readonly log: Logger,
  ) {}

  commit(req: CommitRequest): Promise<SegmentOutcome> {
    return new Promise((resolve, reject) => {
      this.queue.push({ req, resolve, reject });
      void this.drain();
    });
  }

  private async drain(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      while (this.queue.length) await this.run(this.queue.splice(0, MAX_COMMIT_BATCH));
    } finally {
      this.running = false;
    }
  }

  private async run(batch: Pending[]): Promise<void> {
    let outcomes: SegmentOutcome[];
    try {
      outcomes = await this.db.withTransaction((tx) =>
        this.commitBatch(
          tx,
          batch.map((p) => p.req),
        ),
      );
    } catch (err) {
      // One bad request must not fail the others: retry them one by one.
      if (batch.length === 1) return batch[0].reject(err);
      this.log.warn(
        { err: (err as Error).message, requests: batch.length },
        'segment batch failed; committing its requests one by one',
      );
      for (const p of batch) await this.run([p]);
      return;
    }
    this.dispatch(outcomes.flatMap((o) => (o.kind === 'closed' ? [] : o.events)));
    for (const [i, p] of batch.entries()) p.resolve(outcomes[i]);
    // Only a definite outcome may remove our objects; after a failed commit they may be referenced.
    const unreferenced = batch.flatMap((p, i) => {
      const o = outcomes[i];
      const referenced = new Set(o.kind === 'stored' ? o.rows.map((r) => r.object_name) : []);
      return p.req.runs.filter((r) => r.object.created && !referenced.has(r.object.name)).map((r) => r.object.name);
    });
    await Promise.all(unreferenced.map((name) => this.store.delete(name).catch(() => undefined)));
  }

  private async commitBatch(tx: Queryable, reqs: CommitRequest[]): Promise<SegmentOutcome[]> {
    const key = (t: TakeKey) => `${t.meetingId}/${t.audioVersion}`;
    const writing = reqs.filter((r) => r.runs.length);
    // Progress alone is locked too: a take erased underneath (its user gone) is closed, not an
    // event whose user no longer exists (a foreign-key failure the pump would retry for ever).
    const locks = new Map(
      (
        await lockTakesForWrite(
          tx,
          reqs.map((r) => r.take),
        )
      ).map((l) => [`${l.meeting_id}/${l.audio_version}`, l]),
    );
    const open = writing.filter((r) => {
      const state = locks.get(key(r.take))?.state;
      return state !== undefined && state !== 'finalizing' && state !== 'finalized';
    });
    const existing = await rowsStartingIn(
      tx,
      open.map((r) => ({ ...r.take, ranges: r.unknown, since: locks.get(key(r.take))!.created_at })),
    );
    const rowsOf = new Map<string, ManifestRow[]>(open.map((r) => [key(r.take), []]));
    for (const row of existing) rowsOf.get(`${row.meeting_id}/${row.audio_version}`)?.push(row);

    const inserts: ManifestInput[] = [];
    const outcomes: SegmentOutcome[] = [];
    for (const req of reqs) {
      if (!req.runs.length) {
        outcomes.push(locks.has(key(req.take)) ? { kind: 'progress', events: [] } : { kind: 'closed' });
        continue;
      }
      const rows = rowsOf.get(key(req.take));
      const lock = locks.get(key(req.take));
      if (!rows || !lock) {
        outcomes.push({ kind: 'closed' });
        continue;
      }
      const stored: Run[] = [];
      for (const { run, crc32c, byteCount, object } of req.runs) {
        const clash = rows.filter((r) => r.start_sequence <= run.end && r.end_sequence >= run.start);
        const identical =
          clash.length === 1 &&
          clash[0].start_sequence === run.start &&
          clash[0].end_sequence === run.end &&
          clash[0].crc32c === crc32c;
        if (clash.length && !identical) continue;
        stored.push(run);
        if (identical) continue;
        const row: ManifestInput = {
          meeting_id: req.take.meetingId,
          audio_version: req.take.audioVersion,
          start_sequence: run.start,
          end_sequence: run.end,
          started_at_ms: run.start * FRAME_MS,
          duration_ms: (run.end - run.start + 1) * FRAME_MS,
          object_name: object.name,
          object_generation: object.generation,
          byte_count: byteCount,
          crc32c,
        };
        inserts.push(row);
        rows.push({
          ...row,
          id: '',
          object_generation: object.generation,
          sha256: null,
          created_at: new Date().toISOString(),
        });
      }
      outcomes.push({ kind: 'stored', rows, stored, owner: lock.owner_instance, state: lock.state, events: [] });
    }
    // Every request's progress events in one append, whatever the batch size, sent right behind
    // the rows (the connection queues it): the transaction holds its locks one round trip less.
    const due = reqs.flatMap((req, i) => {
      const o = outcomes[i];
      if (o.kind === 'closed') return [];
      return req.progress(o.kind === 'stored' ? o.rows : []).map((body) => ({ userId: req.userId, body, outcome: o }));
    });
    const [, stored] = await Promise.all([insertManifestRows(tx, inserts), appendUserEvents(tx, due)]);
    for (const [i, d] of due.entries()) d.outcome.events.push(stored[i]);
    return outcomes;
  }
}

/**
 * Writes the object create-only. An object already there with our bytes (a retried write that
 * landed) is ours; one with other bytes (left by a writer that died) is not touched: ours gets
 * another name.
 */
async function putObject(store: ObjectStore, name: string, body: Buffer, crc: string): Promise<PreparedRun['object']> {
  for (let n = 0; ; n++) {
    const candidate = n === 0 ? name : name.replace(/\.seg$/, `.${n}.seg`);
    try {
      const stored = await store.write(candidate, body, {
        createOnly: true,
        contentType: 'application/octet-stream',
        crc32c: crc,
      });
      if (stored.crc32c !== crc) {
        await store.delete(candidate).catch(() => undefined);
        throw new Error(`object ${candidate}: stored crc32c ${stored.crc32c} differs from ours ${crc}`);
      }
      return { name: candidate, generation: Number(stored.generation), created: true };
    } catch (err) {
      if (!(err instanceof ObjectExistsError)) throw err;
      const existing = await store.stat(candidate);
      if (existing && existing.crc32c === crc && existing.size === body.length) {
        return { name: candidate, generation: Number(existing.generation), created: false };
      }
    }
  }
}
