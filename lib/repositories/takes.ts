// The takes of a meeting (GET /meetings/{id}/recording/takes) and where a finalized take's audio
// is (GET /meetings/{id}/audio-url?audio_version=N and its proxy link).
import type { Queryable } from '../db/pool';
import { takeAudioPath } from '../objects/take-objects';
import { coverageOf } from '../domain/coverage';
import { decodeCursor, invalidCursor, toPage, type Page } from '../domain/pagination';
import type { Recording } from './recordings';

export interface TakeSummary {
  audio_version: number;
  state: Recording['state'];
  stop_reason: Recording['stop_reason'];
  encoding: Recording['encoding'];
  transcription_id: string | null;
  frames_stored: number;
  bytes_stored: number;
  /** Finalized with frames missing (as the take's transcription is marked). */
  is_degraded: boolean;
  started_at: string;
  stopped_at: string | null;
  finalized_at: string | null;
}

/** Takes oldest first (audio_version ascending), keyset-paginated by audio_version. */
export async function listTakes(
  q: Queryable,
  meetingId: string,
  opts: { limit: number; cursor?: string },
): Promise<Page<TakeSummary>> {
  const after = decodeCursor(opts.cursor, 1);
  if (after && !(typeof after[0] === 'number' && Number.isSafeInteger(after[0]))) throw invalidCursor();
  // Clamped to the column's range (int4): past it there is no take.
  const afterVersion = after ? Math.min(after[0] as number, 2_147_483_647) : 0;
  // One statement: each take with its manifest ranges ([start, end, bytes]), its coverage computed here.
  const { rows } = await q.query<Recording & { ranges: [number, number, number][] }>(
    'takes.list',
    `SELECT r.*, COALESCE((SELECT json_agg(json_build_array(m.start_sequence, m.end_sequence, m.byte_count))
                           FROM segment_manifest m WHERE m.meeting_id = r.meeting_id AND m.audio_version = r.audio_version), '[]') AS ranges
     FROM recording r WHERE r.meeting_id = $1 AND r.audio_version > $2 ORDER BY r.audio_version LIMIT $3`,
    [meetingId, afterVersion, opts.limit + 1],
  );
  const items: TakeSummary[] = [];
  for (const r of rows) {
    const cov = coverageOf(
      r.ranges.map(([start_sequence, end_sequence, byte_count]) => ({ start_sequence, end_sequence, byte_count })),
    );
    items.push({
      audio_version: r.audio_version,
      state: r.state,
      stop_reason: r.stop_reason,
      encoding: r.encoding,
      transcription_id: r.transcription_id,
      frames_stored: cov.frames_stored,
      bytes_stored: cov.bytes_stored,
      // Gap uploads end at finalizing, so the coverage now is the coverage it was finalized with.
      is_degraded: r.state === 'finalized' && cov.missing_ranges.length > 0,
      started_at: r.started_at,
      stopped_at: r.stopped_at,
      finalized_at: r.finalized_at,
    });
  }
  return toPage(items, opts.limit, (t) => [t.audio_version]);
}

/** The composed audio path of a finalized take, or why there is none. */
export function finalizedAudioPath(rec: Recording | null): { path: string } | { missing: 'take' | 'not_finalized' } {
  if (!rec) return { missing: 'take' };
  if (rec.state !== 'finalized') return { missing: 'not_finalized' };
  return { path: takeAudioPath(rec) };
}
