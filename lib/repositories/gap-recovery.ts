// Gap recovery: after a take stopped, the client uploads the frames the server is missing, one
// inclusive sequence range per request, until the gap upload deadline. A range is stored once
// (create-only object + manifest row with its sha256); resending identical bytes is a no-op.
// The operation is lib/use-cases/recording.ts uploadGap; here are its names and rules.
import type { Queryable } from '../db/pool';
import { DomainError } from '../errors';
import { overlappingRows, type Coverage } from './manifest';
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

/**
 * The take's gap upload window: while capture is open the frames belong on the WebSocket (409);
 * past the deadline it is closed (410). Inside it a range already stored is confirmed whatever
 * the take's state, so that a retry whose first answer was lost is told 200 (docs/retries.md);
 * a new range also needs assertTakesNewRanges.
 */
export function assertGapWindowOpen(rec: Recording, now = new Date()): void {
  if (CAPTURE_OPEN.includes(rec.state)) {
    throw new DomainError(
      'recording_open',
      `audio_version ${rec.audio_version} is still recording; send frames over the WebSocket (gap uploads open once it stopped)`,
    );
  }
  if (rec.gap_upload_deadline && Date.parse(rec.gap_upload_deadline) <= now.getTime()) {
    throw new DomainError('closed', `the gap upload deadline (${rec.gap_upload_deadline}) has passed`);
  }
}

/**
 * A range nothing stored overlaps is stored only while the take is stopped. Finalizing or
 * finalized before the deadline means its missing ranges were all filled: its audio is (being)
 * composed and takes no new frame (410, saying so).
 */
export function assertTakesNewRanges(rec: Recording): void {
  if (rec.state === 'stopped') return;
  const audio = rec.state === 'finalized' ? 'its audio is composed' : 'its audio is being composed';
  throw new DomainError(
    'closed',
    `audio_version ${rec.audio_version} is ${rec.state}: every missing range was filled, so ${audio} and it takes no new frames ` +
      `(a range already stored, sent again, still answers 200 until the gap upload deadline, ${rec.gap_upload_deadline})`,
  );
}

/** The refusals certain before the body is read (taken again under the take's lock by the upload itself). */
export async function assertGapUploadPossible(
  q: Queryable,
  rec: Recording,
  up: Pick<GapUpload, 'start' | 'end'>,
): Promise<void> {
  assertGapWindowOpen(rec);
  if (
    rec.state !== 'stopped' &&
    !(await overlappingRows(q, rec.meeting_id, rec.audio_version, up.start, up.end)).length
  )
    assertTakesNewRanges(rec);
}

/** Whether a manifest row of the take references the object. */
export async function gapObjectReferenced(
  q: Queryable,
  up: Pick<GapUpload, 'meetingId' | 'audioVersion'>,
  objectName: string,
): Promise<boolean> {
  const { rowCount } = await q.query(
    'manifest.object_referenced',
    'SELECT 1 FROM segment_manifest WHERE meeting_id = $1 AND audio_version = $2 AND object_name = $3 LIMIT 1',
    [up.meetingId, up.audioVersion, objectName],
  );
  return (rowCount ?? 0) > 0;
}
