// Gap recovery: after a take stopped, the client uploads the frames the server is missing, one
// inclusive sequence range per request, until the gap upload deadline. A range is stored once
// (create-only object + manifest row with its sha256); resending identical bytes is a no-op.
import { createHash } from 'node:crypto';
import type { Queryable } from '../db/pool';
import { DomainError } from '../errors';
import type { EventContext } from '../events';
import { ObjectExistsError, type ObjectStore, type StoredObject } from '../storage';
import { coverage, insertManifestRow, overlappingRows, type Coverage, type ManifestRow } from './manifest';
import { recordEvent } from './recording-events';
import { inUnitOfWork, type Emit, type UnitOfWorkDeps } from '../unit-of-work';
import { CAPTURE_OPEN, getRecording, type Recording } from './recordings';

const FRAME_MS = 100;

export interface GapUpload {
  meetingId: string;
  audioVersion: number;
  start: number;
  end: number;
  bytes: Buffer;
}

export interface GapResult extends Pick<Coverage, 'highest_contiguous_sequence' | 'missing_ranges'> {
  audio_version: number;
  start_sequence: number;
  end_sequence: number;
  byte_count: number;
  sha256: string;
}

export const sha256Hex = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

/** Content-addressed, so two uploads of the same range with other bytes never share an object. */
export const gapPrefix = (meetingId: string, audioVersion: number) => `recordings/${meetingId}/v${audioVersion}/gaps/`;
export const gapObjectName = (meetingId: string, audioVersion: number, start: number, end: number, sha: string) =>
  `${gapPrefix(meetingId, audioVersion)}${start}-${end}-${sha.slice(0, 16)}`;

/**
 * Whether the take takes gap uploads now: while capture is open the frames belong on the
 * WebSocket (409); once finalizing/finalized or past the deadline the window is closed (410).
 */
export function assertAcceptsGaps(rec: Recording, now = new Date()): void {
  if (CAPTURE_OPEN.includes(rec.state)) {
    throw new DomainError('recording_open', `audio_version ${rec.audio_version} is still recording; send frames over the WebSocket (gap uploads open once it stopped)`);
  }
  if (rec.state !== 'stopped') throw new DomainError('gone', `audio_version ${rec.audio_version} is ${rec.state}; gap uploads are closed`);
  if (rec.gap_upload_deadline && Date.parse(rec.gap_upload_deadline) <= now.getTime()) {
    throw new DomainError('gone', `the gap upload deadline (${rec.gap_upload_deadline}) has passed`);
  }
}

/**
 * Stores one range. `onStored` runs in the transaction that inserted the row (for outbox
 * events). Returns 201 when stored, 200 when the identical range was already there.
 */
export async function uploadGapRange(
  deps: UnitOfWorkDeps,
  store: ObjectStore,
  up: GapUpload,
  ctx: EventContext,
  onStored: (emit: Emit, rec: Recording) => void,
): Promise<{ status: 200 | 201; result: GapResult }> {
  const sha = sha256Hex(up.bytes);
  const name = gapObjectName(up.meetingId, up.audioVersion, up.start, up.end, sha);
  // Written before the row lock is taken so that storage latency does not hold it.
  let created = true;
  let stored: StoredObject;
  try {
    stored = await store.write(name, up.bytes, { createOnly: true, contentType: 'application/octet-stream' });
  } catch (err) {
    if (!(err instanceof ObjectExistsError)) throw err;
    created = false; // same name = same range and sha256: an identical retry
    stored = (await store.stat(name))!;
  }

  let outcome: { status: 200 | 201; result: GapResult; objectName: string } | undefined;
  try {
    outcome = await inUnitOfWork(deps, async (tx, emit) => {
      const rec = await getRecording(tx, up.meetingId, up.audioVersion, { forUpdate: true });
      if (!rec) throw new DomainError('not_found', `recording audio_version ${up.audioVersion} not found`);
      assertAcceptsGaps(rec);
      const overlaps = await overlappingRows(tx, up.meetingId, up.audioVersion, up.start, up.end);
      const resultOf = async () => {
        const cov = await coverage(tx, up.meetingId, up.audioVersion);
        return {
          audio_version: up.audioVersion,
          start_sequence: up.start,
          end_sequence: up.end,
          byte_count: up.bytes.length,
          sha256: sha,
          highest_contiguous_sequence: cov.highest_contiguous_sequence,
          missing_ranges: cov.missing_ranges,
        };
      };
      if (overlaps.length) {
        const [row] = overlaps;
        if (overlaps.length === 1 && row.start_sequence === up.start && row.end_sequence === up.end && (await sameBytes(store, row, sha, up.bytes))) {
          return { status: 200 as const, result: await resultOf(), objectName: row.object_name };
        }
        const ranges = overlaps.map((r) => `${r.start_sequence}-${r.end_sequence}`).join(', ');
        throw new DomainError('already_exists', `frames ${up.start}-${up.end} overlap stored frames (${ranges}) with other bytes or another range; upload only the missing ranges`);
      }
      await insertManifestRow(tx, {
        meeting_id: up.meetingId,
        audio_version: up.audioVersion,
        start_sequence: up.start,
        end_sequence: up.end,
        started_at_ms: up.start * FRAME_MS,
        duration_ms: (up.end - up.start + 1) * FRAME_MS,
        object_name: name,
        object_generation: Number(stored.generation),
        byte_count: up.bytes.length,
        crc32c: stored.crc32c,
        sha256: sha,
      });
      await recordEvent(tx, up.meetingId, 'gap_uploaded', { audio_version: up.audioVersion, start_sequence: up.start, end_sequence: up.end, byte_count: up.bytes.length, sha256: sha });
      onStored(emit, rec);
      return { status: 201 as const, result: await resultOf(), objectName: name };
    }, { ctx });
    return { status: outcome.status, result: outcome.result };
  } finally {
    // Our object is garbage unless a row references it (a concurrent identical upload may).
    if (created && outcome?.objectName !== name && !(await referenced(deps.db, up, name))) await store.delete(name).catch(() => undefined);
  }
}

async function sameBytes(store: ObjectStore, row: ManifestRow, sha: string, bytes: Buffer): Promise<boolean> {
  if (row.byte_count !== bytes.length) return false;
  if (row.sha256) return row.sha256 === sha;
  return (await store.readAll(row.object_name)).equals(bytes); // a live segment: no sha256 stored
}

async function referenced(q: Queryable, up: GapUpload, objectName: string): Promise<boolean> {
  const { rowCount } = await q.query(
    'manifest.object_referenced',
    'SELECT 1 FROM segment_manifest WHERE meeting_id = $1 AND audio_version = $2 AND object_name = $3 LIMIT 1',
    [up.meetingId, up.audioVersion, objectName],
  );
  return (rowCount ?? 0) > 0;
}
