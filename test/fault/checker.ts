// The Jepsen-style set check of a client's takes after healing: every frame the server
// acknowledged (reported durable to the client) must be in exactly one manifest row and in the
// take's composed audio, byte for byte; manifest ranges never overlap; every object under the
// meeting's prefix is referenced by a manifest row or is a take's composed file.
import { listManifest } from '@mi/lib/repositories/manifest';
import { getRecording } from '@mi/lib/repositories/recordings';
import type { Runtime } from '@mi/lib/adapters/runtime';

const WAV_HEADER_BYTES = 44;

export interface MeetingUnderTest {
  name: string;
  meetingId: string;
  takes: {
    audioVersion: number;
    /** Frames 0..sent-1 were recorded by the client. */
    sent: number;
    /** The highest sequence the server acknowledged as durable and contiguous from 0. */
    ackedThrough: number;
  }[];
  frameBytes(audioVersion: number, seq: number): Buffer;
}

export interface TakeReport {
  name: string;
  meetingId: string;
  audioVersion: number;
  sent: number;
  acked: number;
  /** Frames found intact in the manifest's objects. */
  stored: number;
  /** Acknowledged frames missing or damaged: must be 0. */
  lost: number[];
  /** Extra copies of frames covered by more than one manifest row (overlapping ranges): must be 0. */
  duplicated: number;
  /** Frames recorded but not stored in the end (not acknowledged, and not recovered by gap upload). */
  unrecovered: number;
  state: string;
  /** The composed audio holds exactly the stored frames in order behind the WAV header. */
  composed: 'ok' | 'missing' | 'mismatch';
  degraded: boolean | null;
}

/** Checks every take of one meeting, and that no object under the meeting's prefix is a stray. */
export async function checkMeeting(
  rt: Pick<Runtime, 'db' | 'store'>,
  m: MeetingUnderTest,
): Promise<{ takes: TakeReport[]; strays: string[] }> {
  const referenced = new Set<string>();
  const takes: TakeReport[] = [];
  for (const t of m.takes) takes.push(await checkTake(rt, m, t, referenced));
  const strays = (await rt.store.list(`recordings/${m.meetingId}/`))
    .map((o) => o.name)
    .filter((name) => !referenced.has(name));
  return { takes, strays };
}

async function checkTake(
  rt: Pick<Runtime, 'db' | 'store'>,
  m: MeetingUnderTest,
  t: MeetingUnderTest['takes'][number],
  referenced: Set<string>,
): Promise<TakeReport> {
  const frameBytes = (seq: number) => m.frameBytes(t.audioVersion, seq);
  const rows = await listManifest(rt.db, m.meetingId, t.audioVersion);
  const copies = new Map<number, number>();
  const covering = new Map<number, number>();
  for (const row of rows) {
    referenced.add(row.object_name);
    for (let seq = row.start_sequence; seq <= row.end_sequence; seq++) covering.set(seq, (covering.get(seq) ?? 0) + 1);
    const object = await rt.store.readAll(row.object_name).catch(() => Buffer.alloc(0));
    let offset = 0;
    for (let seq = row.start_sequence; seq <= row.end_sequence; seq++) {
      const expected = frameBytes(seq);
      if (object.subarray(offset, offset + expected.length).equals(expected))
        copies.set(seq, (copies.get(seq) ?? 0) + 1);
      offset += expected.length;
    }
  }
  const lost: number[] = [];
  for (let seq = 0; seq <= t.ackedThrough; seq++) if (!copies.has(seq)) lost.push(seq);
  let duplicated = 0;
  for (const n of covering.values()) if (n > 1) duplicated += n - 1;
  let unrecovered = 0;
  for (let seq = 0; seq < t.sent; seq++) if (!copies.has(seq)) unrecovered++;

  const rec = await getRecording(rt.db, m.meetingId, t.audioVersion);
  // Each take keeps its composed file (its `finalized` history event names it); meeting_audio_file points at the newest.
  const { rows: finalized } = await rt.db.query<{ path: string | null }>(
    'fault.composed_path',
    `SELECT payload->>'storage_path' AS path FROM recording_event_history
     WHERE meeting_id = $1 AND event_type = 'finalized' AND (payload->>'audio_version')::int = $2`,
    [m.meetingId, t.audioVersion],
  );
  const composedPath = finalized[0]?.path ?? null;
  const audio = composedPath ? await rt.store.readAll(composedPath).catch(() => null) : null;
  let composed: TakeReport['composed'] = finalized.length > 1 ? 'mismatch' : 'missing'; // finalized twice is wrong too
  if (finalized.length === 1 && !composedPath && !rows.length) composed = 'ok'; // a take without frames has nothing to compose
  if (composedPath && audio && finalized.length === 1) {
    referenced.add(composedPath);
    const frames = [...copies.keys()].sort((a, b) => a - b).map(frameBytes);
    composed =
      audio.subarray(WAV_HEADER_BYTES).equals(Buffer.concat(frames)) &&
      audio.subarray(0, 4).toString('ascii') === 'RIFF'
        ? 'ok'
        : 'mismatch';
  }
  const degraded = rec?.transcription_id
    ? ((
        await rt.db.query<{ is_degraded: boolean }>(
          'fault.degraded',
          'SELECT is_degraded FROM transcription WHERE id = $1',
          [rec.transcription_id],
        )
      ).rows[0]?.is_degraded ?? null)
    : null;

  return {
    name: m.name,
    meetingId: m.meetingId,
    audioVersion: t.audioVersion,
    sent: t.sent,
    acked: t.ackedThrough + 1,
    stored: copies.size,
    lost,
    duplicated,
    unrecovered,
    state: rec?.state ?? 'missing',
    composed,
    degraded,
  };
}

export interface NoLossTotals {
  takes: number;
  sent: number;
  acked: number;
  stored: number;
  lost: number;
  duplicated: number;
  unrecovered: number;
  notFinalized: number;
  composedBad: number;
}

export function totals(reports: TakeReport[]): NoLossTotals {
  const sum = (f: (r: TakeReport) => number) => reports.reduce((n, r) => n + f(r), 0);
  return {
    takes: reports.length,
    sent: sum((r) => r.sent),
    acked: sum((r) => r.acked),
    stored: sum((r) => r.stored),
    lost: sum((r) => r.lost.length),
    duplicated: sum((r) => r.duplicated),
    unrecovered: sum((r) => r.unrecovered),
    notFinalized: sum((r) => (r.state === 'finalized' ? 0 : 1)),
    composedBad: sum((r) => (r.composed === 'ok' ? 0 : 1)),
  };
}
