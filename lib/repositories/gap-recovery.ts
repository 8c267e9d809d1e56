// Gap recovery: after a take stopped, the client uploads the frames the server is missing, one
// inclusive sequence range per request, until the gap upload deadline. A range is stored once
// (create-only object + manifest row with its sha256); resending identical bytes is a no-op.
// The operation is lib/use-cases/recording.ts uploadGap; here are its names and rules.
import type { Queryable } from '../db/pool';
import { DomainError } from '../errors';
import type { Coverage } from './manifest';
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
 * Whether the take takes gap uploads now: while capture is open the frames belong on the
 * WebSocket (409); once finalizing/finalized or past the deadline the window is closed (410).
 */
export function assertAcceptsGaps(rec: Recording, now = new Date()): void {
  if (CAPTURE_OPEN.includes(rec.state)) {
    throw new DomainError(
      'recording_open',
      `audio_version ${rec.audio_version} is still recording; send frames over the WebSocket (gap uploads open once it stopped)`,
    );
  }
  if (rec.state !== 'stopped')
    throw new DomainError('closed', `audio_version ${rec.audio_version} is ${rec.state}; gap uploads are closed`);
  if (rec.gap_upload_deadline && Date.parse(rec.gap_upload_deadline) <= now.getTime()) {
    throw new DomainError('closed', `the gap upload deadline (${rec.gap_upload_deadline}) has passed`);
  }
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
