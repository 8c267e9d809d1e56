// Transcript segments: bulk append (live path) and atomic replace (batch rebuild). Inserts go
// as ONE statement over a json_to_recordset parameter, so 5,000 segments cost one round trip.
// Stored speaker-label assignments are resolved in the same statement.
import { randomUUID } from 'node:crypto';
import pgvector from 'pgvector';
import type { Queryable } from '../db/pool';
import { DomainError, unprocessable } from '../errors';
import type { Actor } from '../domain/actor';
import { decodeCursor, toPage, type Page } from '../domain/pagination';
import { applySpeakerLabels } from './speaker-label-reapply';
import { syncVoiceSamples, takeVoiceSamples } from './voice-samples';

/** POST (live path) and PUT (a whole take: 4 h at one segment per 0.72 s, decisions.md section 8) bounds. */
export const MAX_APPENDED_SEGMENTS = 5000;
export const MAX_REPLACED_SEGMENTS = 20_000;

export interface SegmentInput {
  /** Chosen by the client (the ML links segment_ids to it without reading back); a new uuid otherwise. */
  id?: string;
  speaker_label?: string | null;
  text: string;
  start_ms: number;
  /** Default: start_ms (a segment never ends before it starts, decisions.md section 8). */
  end_ms?: number;
  confidence?: number;
  is_final?: boolean;
  is_highlighted?: boolean;
  feature_vector?: number[] | null;
  person_id?: string | null;
}

const endOf = (s: SegmentInput) => s.end_ms ?? s.start_ms;

export interface Segment {
  id: string;
  transcription_id: string;
  person_id: string | null;
  speaker_label: string | null;
  text: string;
  start_ms: number;
  end_ms: number;
  confidence: number;
  is_final: boolean;
  is_highlighted: boolean;
  feature_vector: number[] | null;
}

/** A segment as broadcast: the embedding stays out of events (clients do not use it). */
export type SegmentEventBody = Omit<Segment, 'id' | 'feature_vector'> & { id: string | null };

const COLUMNS =
  's.id, s.transcription_id, s.person_id, s.speaker_label, s.text, s.start_ms, s.end_ms, s.confidence, s.is_final, s.is_highlighted, s.feature_vector::text AS feature_vector';

/** A segment as selected by COLUMNS: the vector in pgvector's text form. */
type SegmentRow = Omit<Segment, 'feature_vector'> & { feature_vector: string | null };

const fromRow = <R extends SegmentRow>(r: R): Omit<R, 'feature_vector'> & Pick<Segment, 'feature_vector'> => ({
  ...r,
  feature_vector: r.feature_vector === null ? null : pgvector.fromSql(r.feature_vector),
});

/** 422 unless every given person_id is a person of `ownerUserId` (others' ids count as nonexistent). */
export async function assertPeopleOf(
  q: Queryable,
  ownerUserId: string,
  personIds: (string | null | undefined)[],
  field = 'person_id',
): Promise<void> {
  const ids = [...new Set(personIds.filter((p): p is string => !!p))];
  if (!ids.length) return;
  const { rows } = await q.query<{ id: string }>(
    'person.ids_of_user',
    'SELECT id FROM person WHERE user_id = $1 AND id = ANY($2::uuid[])',
    [ownerUserId, ids],
  );
  if (rows.length === ids.length) return;
  const found = new Set(rows.map((r) => r.id));
  throw unprocessable(
    `${field} does not exist`,
    ids.filter((id) => !found.has(id)).map((id) => ({ path: field, message: `person ${id} does not exist` })),
  );
}

/**
 * The vectors as one binary float4[] (node-pg sends a Buffer in binary format): parsing the
 * text form of 500 embeddings costs PGlite more than writing 5,000 rows.
 */
function float4Array(vectors: number[][]): Buffer {
  const n = vectors.reduce((sum, v) => sum + v.length, 0);
  // ndim, has-nulls flag, element type (float4), then for one dimension its length and lower bound.
  const header = n ? [1, 0, 700, n, 1] : [0, 0, 700];
  const buf = Buffer.alloc(header.length * 4 + n * 8);
  for (const [i, x] of header.entries()) buf.writeInt32BE(x, i * 4);
  let o = header.length * 4;
  for (const v of vectors) {
    for (const x of v) {
      buf.writeInt32BE(4, o);
      buf.writeFloatBE(x, o + 4);
      o += 8;
    }
  }
  return buf;
}

/** Inserts the segments in one statement; returns their ids in input order. */
async function insertSegments(tx: Queryable, transcriptionId: string, segments: SegmentInput[]): Promise<string[]> {
  if (!segments.length) return [];
  const ids = segments.map((s) => s.id ?? randomUUID());
  const given = ids.filter((_, i) => segments[i].id);
  if (new Set(given).size < given.length)
    throw unprocessable('a segment id appears twice', [{ path: 'segments.id', message: 'ids must be unique' }]);
  const vectors: number[][] = [];
  let offset = 0;
  const records = segments.map((s, i) => {
    const v = s.feature_vector;
    if (v) vectors.push(v);
    const record = {
      id: ids[i],
      person_id: s.person_id ?? null,
      speaker_label: s.speaker_label ?? null,
      text: s.text,
      start_ms: s.start_ms,
      end_ms: endOf(s),
      confidence: s.confidence ?? 0,
      is_final: s.is_final ?? true,
      is_highlighted: s.is_highlighted ?? false,
      // The embedding's slice of the float4[] parameter (1-based, inclusive).
      v_from: v ? offset + 1 : null,
      v_to: v ? offset + v.length : null,
    };
    offset += v?.length ?? 0;
    return record;
  });
  // Assigned labels are resolved while inserting: rewriting the rows afterwards costs a second
  // write of every labelled row.
  const inserted = await tx.query(
    'segment.insert_bulk',
    `INSERT INTO transcript_segment (id, transcription_id, person_id, speaker_label, text, start_ms, end_ms, confidence, is_final, is_highlighted, feature_vector)
     SELECT r.id, t.id, COALESCE(l.person_id, r.person_id), r.speaker_label, r.text, r.start_ms, r.end_ms, r.confidence, r.is_final, r.is_highlighted,
       ($3::float4[])[r.v_from:r.v_to]::vector
     FROM transcription t
     CROSS JOIN json_to_recordset($2::json) AS r(id uuid, person_id uuid, speaker_label text, text text, start_ms numeric, end_ms numeric,
       confidence numeric, is_final boolean, is_highlighted boolean, v_from int, v_to int)
     LEFT JOIN meeting_speaker_label l ON l.meeting_id = t.meeting_id AND l.speaker_label = r.speaker_label
     WHERE t.id = $1
     ON CONFLICT (id) DO NOTHING`,
    [transcriptionId, JSON.stringify(records), float4Array(vectors)],
  );
  // Only a client-chosen id can collide: one of another transcription's segments (or a concurrent request's).
  if (inserted.rowCount !== segments.length)
    throw new DomainError('already_exists', 'a segment id is already taken by another segment');
  return ids;
}

interface StoredSegmentContent {
  id: string;
  transcription_id: string;
  speaker_label: string | null;
  text: string;
  start_ms: number;
  end_ms: number;
  confidence: number;
  is_highlighted: boolean;
  has_vector: boolean;
}

/**
 * The segments not stored yet: one whose client-chosen id is stored with the same content is a
 * repeat and is left out; stored with different content (or in another transcription) it is 409.
 */
async function newSegments(tx: Queryable, transcriptionId: string, segments: SegmentInput[]): Promise<SegmentInput[]> {
  const ids = segments.flatMap((s) => (s.id ? [s.id] : []));
  if (!ids.length) return segments;
  const { rows } = await tx.query<StoredSegmentContent>(
    'segment.by_client_ids',
    `SELECT id, transcription_id, speaker_label, text, start_ms::float8 AS start_ms, end_ms::float8 AS end_ms,
       confidence::float8 AS confidence, is_highlighted, feature_vector IS NOT NULL AS has_vector
     FROM transcript_segment WHERE id = ANY($1::uuid[])`,
    [ids],
  );
  const stored = new Map(rows.map((r) => [r.id, r]));
  return segments.filter((s) => {
    const r = s.id ? stored.get(s.id) : undefined;
    if (!r) return true;
    const same =
      r.transcription_id === transcriptionId &&
      r.speaker_label === (s.speaker_label ?? null) &&
      r.text === s.text &&
      r.start_ms === s.start_ms &&
      r.end_ms === endOf(s) &&
      r.confidence === (s.confidence ?? 0) &&
      r.is_highlighted === (s.is_highlighted ?? false) &&
      r.has_vector === !!s.feature_vector;
    if (!same) throw new DomainError('already_exists', `segment ${s.id} is already stored with different content`);
    return false;
  });
}

async function segmentsById(q: Queryable, ids: string[]): Promise<Segment[]> {
  const { rows } = await q.query<SegmentRow>(
    'segment.by_ids',
    `SELECT ${COLUMNS} FROM transcript_segment s WHERE s.id = ANY($1::uuid[])`,
    [ids],
  );
  const byId = new Map(rows.map((r) => [r.id, fromRow(r)]));
  return ids.map((id) => byId.get(id)!);
}

/** The person each speaker label of the transcription's meeting is assigned to. */
async function labelAssignments(q: Queryable, transcriptionId: string): Promise<Map<string, string>> {
  const { rows } = await q.query<{ speaker_label: string; person_id: string }>(
    'speaker_label.of_transcription',
    `SELECT l.speaker_label, l.person_id FROM meeting_speaker_label l JOIN transcription t ON t.meeting_id = l.meeting_id WHERE t.id = $1`,
    [transcriptionId],
  );
  return new Map(rows.map((r) => [r.speaker_label, r.person_id]));
}

export interface AppendResult {
  /** One entry per input segment in input order: stored finals (with their id) and interim ones (id null, not stored). */
  broadcast: SegmentEventBody[];
  /** People whose voice model changed: the new segments attributed to them became voice samples. */
  people: string[];
}

/**
 * Live path: stores the final segments, applies label assignments, and returns every segment
 * (final and interim) in request order for broadcasting. Interim segments are not stored.
 */
export async function appendSegments(
  tx: Queryable,
  transcriptionId: string,
  input: SegmentInput[],
): Promise<AppendResult> {
  // Repeats of stored segments (same client id and content) add nothing and are not broadcast again.
  const fresh = new Set(
    await newSegments(
      tx,
      transcriptionId,
      input.filter((s) => s.is_final !== false),
    ),
  );
  const segments = input.filter((s) => s.is_final === false || fresh.has(s));
  const finals = segments.filter((s) => s.is_final !== false);
  const ids = await insertSegments(tx, transcriptionId, finals);
  // Normally only the new segments change attribution; should the re-apply have relabelled older
  // ones too (a race its comment describes), every segment of the transcription is synced.
  const relabelled = await applySpeakerLabels(tx, transcriptionId);
  const people = relabelled
    ? await syncVoiceSamples(tx, { transcriptionId })
    : ids.length
      ? await syncVoiceSamples(tx, { transcriptionId, segmentIds: ids }, [], { onlyNew: true })
      : [];
  const stored = ids.length ? await segmentsById(tx, ids) : [];
  const labels =
    finals.length < segments.length ? await labelAssignments(tx, transcriptionId) : new Map<string, string>();
  let next = 0;
  const broadcast = segments.map((s): SegmentEventBody => {
    if (s.is_final !== false) {
      const { feature_vector: _v, ...seg } = stored[next++];
      return seg;
    }
    return {
      id: null,
      transcription_id: transcriptionId,
      person_id: (s.speaker_label && labels.get(s.speaker_label)) || s.person_id || null,
      speaker_label: s.speaker_label ?? null,
      text: s.text,
      start_ms: s.start_ms,
      end_ms: endOf(s),
      confidence: s.confidence ?? 0,
      is_final: false,
      is_highlighted: s.is_highlighted ?? false,
    };
  });
  return { broadcast, people };
}

/**
 * Batch rebuild: deletes every segment of the transcription (and their voice samples) and inserts
 * the new set (all stored); attributed new segments become samples. Returns the people whose
 * voice model changed.
 */
export async function replaceSegments(
  tx: Queryable,
  transcriptionId: string,
  segments: SegmentInput[],
): Promise<string[]> {
  const dropped = await takeVoiceSamples(tx, { transcriptionId });
  await tx.query('segment.delete_all', 'DELETE FROM transcript_segment WHERE transcription_id = $1', [transcriptionId]);
  await insertSegments(tx, transcriptionId, segments);
  await applySpeakerLabels(tx, transcriptionId);
  // Every segment of the transcription is new: none has a sample yet.
  return syncVoiceSamples(tx, { transcriptionId }, dropped, { onlyNew: true });
}

/** True while a live recording's capture of this transcription is open (decisions.md section 4). */
export async function isInProcessing(q: Queryable, transcriptionId: string): Promise<boolean> {
  const { rows } = await q.query(
    'recording.in_processing',
    `SELECT 1 FROM recording WHERE transcription_id = $1 AND state IN ('recording', 'stopping') LIMIT 1`,
    [transcriptionId],
  );
  return rows.length > 0;
}

export interface SegmentListQuery {
  limit: number;
  cursor?: string;
  order?: 'asc' | 'desc';
}

/** Segments of a transcription the actor may see, by (start_ms, id). */
export async function listSegments(
  q: Queryable,
  actor: Actor,
  transcriptionId: string,
  f: SegmentListQuery,
): Promise<Page<Segment>> {
  const after = decodeCursor(f.cursor, 2);
  const desc = f.order === 'desc';
  const { rows } = await q.query<SegmentRow>(
    desc ? 'segment.list_desc' : 'segment.list_asc',
    `SELECT ${COLUMNS} FROM transcript_segment s
     JOIN transcription t ON t.id = s.transcription_id JOIN meeting m ON m.id = t.meeting_id
     WHERE s.transcription_id = $1 AND ($2::uuid IS NULL OR m.user_id = $2) AND m.deleted_at IS NULL
       AND ($3::numeric IS NULL OR (s.start_ms, s.id) ${desc ? '<' : '>'} ($3::numeric, $4::uuid))
     ORDER BY s.start_ms ${desc ? 'DESC' : 'ASC'}, s.id ${desc ? 'DESC' : 'ASC'} LIMIT $5`,
    [transcriptionId, actor.userId, after?.[0] ?? null, after?.[1] ?? null, f.limit + 1],
  );
  return toPage(rows.map(fromRow), f.limit, (s) => [s.start_ms, s.id]);
}

export interface SegmentPatch {
  text?: string;
  is_highlighted?: boolean;
  /** Moves the segment to another label of its meeting (speaker-label-assignments.ts moveSegmentToLabel). */
  speaker_label?: string;
}

/** One segment of a meeting of the actor's, as the API renders it; FOR UPDATE locks it for a conditional change. */
export async function getSegment(
  q: Queryable,
  actor: Actor,
  id: string,
  opts: { forUpdate?: boolean } = {},
): Promise<Segment | null> {
  const { rows } = await q.query<SegmentRow>(
    'segment.get',
    `SELECT ${COLUMNS} FROM transcript_segment s JOIN transcription t ON t.id = s.transcription_id JOIN meeting m ON m.id = t.meeting_id
     WHERE s.id = $1 AND m.user_id = $2 AND m.deleted_at IS NULL${opts.forUpdate ? ' FOR UPDATE OF s' : ''}`,
    [id, actor.userId],
  );
  return rows[0] ? fromRow(rows[0]) : null;
}

/** A user's correction of one segment of their meeting; null when not theirs (or not found). */
export async function updateSegment(
  tx: Queryable,
  actor: Actor,
  id: string,
  patch: SegmentPatch,
): Promise<(Segment & { meeting_id: string; user_id: string }) | null> {
  const { rows } = await tx.query<SegmentRow & { meeting_id: string; user_id: string }>(
    'segment.update',
    `UPDATE transcript_segment s SET text = coalesce($3, s.text), is_highlighted = coalesce($4, s.is_highlighted)
     FROM transcription t JOIN meeting m ON m.id = t.meeting_id
     WHERE s.id = $1 AND t.id = s.transcription_id AND m.user_id = $2 AND m.deleted_at IS NULL
     RETURNING ${COLUMNS}, t.meeting_id, m.user_id`,
    [id, actor.userId, patch.text ?? null, patch.is_highlighted ?? null],
  );
  return rows[0] ? fromRow(rows[0]) : null;
}

/**
 * 422 unless every id names a transcript segment of this meeting (the service may only link
 * its own meeting's segments; another meeting's or user's count as nonexistent).
 */
export async function assertSegmentsOfMeeting(
  q: Queryable,
  meetingId: string,
  ids: string[],
  field: string,
): Promise<void> {
  const unique = [...new Set(ids)];
  if (!unique.length) return;
  const { rows } = await q.query<{ missing: string[] }>(
    'segment.of_meeting',
    `SELECT coalesce(array_agg(u.id), '{}') AS missing FROM unnest($2::uuid[]) AS u(id)
     WHERE NOT EXISTS (SELECT 1 FROM transcript_segment s JOIN transcription t ON t.id = s.transcription_id WHERE s.id = u.id AND t.meeting_id = $1)`,
    [meetingId, unique],
  );
  const missing = rows[0].missing;
  if (missing.length) {
    throw unprocessable(
      `${field}: ${missing.length} id(s) are not segments of this meeting`,
      missing.slice(0, 10).map((id) => ({ path: field, message: `${id} is not a segment of this meeting` })),
    );
  }
}
