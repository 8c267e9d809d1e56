// Gap recovery: after a take stopped, the client uploads the frames the server is missing, one
// inclusive sequence range per request, until the gap upload deadline. A range is stored once
// (create-only object + manifest row with its sha256); resending identical bytes is a no-op.
// The operation is lib/use-cases/recording.ts uploadGap; here are its names and rules.
import { createHash } from 'node:crypto';
import type { Queryable } from '../db/pool';
import { DomainError } from '../errors';
import type { ObjectStore } from '../storage';
import { MAX_MISSING_RANGES, type Range } from './coverage';
import type { Coverage, ManifestRow } from './manifest';
import { CAPTURE_OPEN, type Recording } from './recordings';

export const FRAME_MS = 100;

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
 * 422 too_many_gaps when storing frames start..end would leave the take more than
 * MAX_MISSING_RANGES missing ranges (and more than it has): a range past the highest frame with
 * a gap, or inside a missing range away from its ends, opens one. Uploads in sequence order never do.
 */
export function assertGapsBounded(before: Pick<Coverage, 'missing_ranges' | 'highest_sequence'>, start: number, end: number): void {
  const after: Range[] = before.missing_ranges.flatMap(([a, b]): Range[] => [[a, Math.min(b, start - 1)], [Math.max(a, end + 1), b]]).filter(([a, b]) => a <= b);
  if (start > before.highest_sequence + 1) after.push([before.highest_sequence + 1, start - 1]);
  if (after.length > Math.max(MAX_MISSING_RANGES, before.missing_ranges.length)) {
    throw new DomainError(
      'too_many_gaps',
      `storing frames ${start}-${end} would leave the take ${after.length} missing ranges (at most ${MAX_MISSING_RANGES}); nothing was stored: upload the missing ranges in sequence order`,
    );
  }
}

/** Whether a stored row holds these bytes (the identical range resent). */
export async function sameBytes(store: ObjectStore, row: ManifestRow, sha: string, bytes: Buffer): Promise<boolean> {
  if (row.byte_count !== bytes.length) return false;
  if (row.sha256) return row.sha256 === sha;
  return (await store.readAll(row.object_name)).equals(bytes); // a live segment: no sha256 stored
}

/** Whether a manifest row of the take references the object. */
export async function gapObjectReferenced(q: Queryable, up: Pick<GapUpload, 'meetingId' | 'audioVersion'>, objectName: string): Promise<boolean> {
  const { rowCount } = await q.query(
    'manifest.object_referenced',
    'SELECT 1 FROM segment_manifest WHERE meeting_id = $1 AND audio_version = $2 AND object_name = $3 LIMIT 1',
    [up.meetingId, up.audioVersion, objectName],
  );
  return (rowCount ?? 0) > 0;
}
