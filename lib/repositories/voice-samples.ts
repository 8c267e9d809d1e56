// Voice samples (decisions.md section 6, "Voice models (provenance)"): every segment attributed
// to a person that has a non-zero feature_vector is one sample of that person, and the person's
// voice model is derived from their samples alone:
//   voice_vector     = normalise(Σ samples)          (each sample stored L2-normalised)
//   voice_confidence = |Σ samples| / n               (the mean cosine similarity to voice_vector)
//   voice_model_status = ready with samples, untrained without.
// Every path that attributes or detaches segments calls syncVoiceSamples for the segments it
// touched, in its own transaction. Added samples are added to person.voice_sum (exact up to float
// rounding); a person who lost samples is recounted from the rows, so removals never drift.
import pgvector from 'pgvector';
import type { Queryable } from '../db/pool';
import { createdKey, decodeCreatedCursor, toCreatedPage, type Page } from '../domain/pagination';

/** Which segments a sync looks at: a transcription (or just some of its segments), or one label of a meeting. */
export type SegmentScope =
  | { transcriptionId: string; segmentIds?: string[] }
  | { meetingId: string; speakerLabel: string };

const DIM = 192;

function scopeSql(scope: SegmentScope): { where: string; params: unknown[] } {
  if ('meetingId' in scope)
    return { where: 't.meeting_id = $1 AND s.speaker_label = $2', params: [scope.meetingId, scope.speakerLabel] };
  return scope.segmentIds
    ? { where: 's.transcription_id = $1 AND s.id = ANY($2::uuid[])', params: [scope.transcriptionId, scope.segmentIds] }
    : { where: 's.transcription_id = $1', params: [scope.transcriptionId] };
}

/**
 * Makes the samples of the scope's segments match their attribution: moves samples whose segment
 * is now attributed to someone else (reassigned), drops those whose segment lost its person
 * (unassigned), records a sample for every attributed segment with a usable embedding that has
 * none, and updates the models of every person concerned (and of `recountToo`). Returns those
 * people's ids (their voice model changed). `onlyNew`: the scope's segments were just inserted, so
 * none has a sample to move or drop yet (saves two statements on the append and replace paths).
 */
export async function syncVoiceSamples(
  tx: Queryable,
  scope: SegmentScope,
  recountToo: string[] = [],
  opts: { onlyNew?: boolean } = {},
): Promise<string[]> {
  const { where, params } = scopeSql(scope);
  const none = { rows: [] };
  // Moved in place (no re-normalising, no new row): the old person is recounted, the new one gets
  // the moved embeddings added. `o` is the row as it was before this statement.
  const { rows: moved } = opts.onlyNew
    ? none
    : await tx.query<{ person_id: string; lost: boolean; n: number; mean: string | null }>(
        'voice_sample.move',
        `WITH moved AS (
       UPDATE voice_sample v SET person_id = s.person_id, speaker_label = s.speaker_label, created_at = now()
       FROM transcript_segment s JOIN transcription t ON t.id = s.transcription_id, voice_sample o
       WHERE v.segment_id = s.id AND o.segment_id = v.segment_id AND ${where}
         AND s.person_id IS NOT NULL AND v.person_id <> s.person_id
       RETURNING o.person_id AS old_person, v.person_id AS new_person, v.embedding)
     SELECT old_person AS person_id, true AS lost, 0 AS n, NULL AS mean FROM moved GROUP BY old_person
     UNION ALL
     SELECT new_person, false, count(*)::int, avg(embedding)::text FROM moved GROUP BY new_person`,
        params,
      );
  const { rows: dropped } = opts.onlyNew
    ? none
    : await tx.query<{ person_id: string }>(
        'voice_sample.drop_detached',
        `WITH gone AS (
       DELETE FROM voice_sample v USING transcript_segment s JOIN transcription t ON t.id = s.transcription_id
       WHERE v.segment_id = s.id AND ${where} AND s.person_id IS NULL
       RETURNING v.person_id)
     SELECT DISTINCT person_id FROM gone`,
        params,
      );
  // The batch's mean in float8 (pgvector's avg; its sum accumulates in float4), times its count.
  const { rows: recorded } = await tx.query<{ person_id: string; n: number; mean: string }>(
    'voice_sample.record',
    `WITH added AS (
       INSERT INTO voice_sample (segment_id, person_id, meeting_id, speaker_label, embedding)
       SELECT s.id, s.person_id, t.meeting_id, s.speaker_label, l2_normalize(s.feature_vector)
       FROM transcript_segment s JOIN transcription t ON t.id = s.transcription_id
       WHERE ${where} AND s.person_id IS NOT NULL AND s.feature_vector IS NOT NULL AND vector_norm(s.feature_vector) > 0
         AND NOT EXISTS (SELECT 1 FROM voice_sample v WHERE v.segment_id = s.id)
       ON CONFLICT (segment_id) DO NOTHING
       RETURNING person_id, embedding)
     SELECT person_id, count(*)::int AS n, avg(embedding)::text AS mean FROM added GROUP BY person_id`,
    params,
  );
  const recount = new Set([
    ...recountToo,
    ...dropped.map((r) => r.person_id),
    ...moved.filter((m) => m.lost).map((m) => m.person_id),
  ]);
  // A person's additions from moves and new samples, summed; recounted people need none.
  const added = new Map<string, { n: number; sum: number[] }>();
  for (const a of [...moved.filter((m) => !m.lost), ...recorded]) {
    if (recount.has(a.person_id) || a.mean === null) continue;
    const batch = (pgvector.fromSql(a.mean) as number[]).map((x) => x * a.n);
    const prev = added.get(a.person_id);
    added.set(
      a.person_id,
      prev ? { n: prev.n + a.n, sum: prev.sum.map((x, i) => x + batch[i]) } : { n: a.n, sum: batch },
    );
  }
  await updateVoiceModels(
    tx,
    [...recount],
    [...added].map(([personId, a]) => ({ personId, n: a.n, sum: pgvector.toSql(a.sum) })),
  );
  return [...new Set([...recount, ...moved.map((m) => m.person_id), ...recorded.map((r) => r.person_id)])];
}

/**
 * Deletes every sample of the scope's segments (before the segments themselves are deleted) and
 * returns the people concerned, without touching their models: the caller passes them to
 * syncVoiceSamples as `recountToo` later in the same transaction.
 */
export async function takeVoiceSamples(tx: Queryable, scope: SegmentScope): Promise<string[]> {
  const { where, params } = scopeSql(scope);
  const { rows } = await tx.query<{ person_id: string }>(
    'voice_sample.drop_scope',
    `WITH gone AS (
       DELETE FROM voice_sample v USING transcript_segment s JOIN transcription t ON t.id = s.transcription_id
       WHERE v.segment_id = s.id AND ${where}
       RETURNING v.person_id)
     SELECT DISTINCT person_id FROM gone`,
    params,
  );
  return rows.map((r) => r.person_id);
}

/**
 * Removes the voice samples of these meetings and recomputes the affected people's models, in the
 * caller's transaction: meeting purge and account erasure call it before deleting the meetings'
 * rows (the schema's cascade would drop the samples but leave the people's sums behind).
 * Returns the people whose model changed.
 */
export async function removeMeetingVoiceSamples(tx: Queryable, meetingIds: string[]): Promise<string[]> {
  if (!meetingIds.length) return [];
  const { rows } = await tx.query<{ person_id: string }>(
    'voice_sample.drop_meetings',
    `WITH gone AS (DELETE FROM voice_sample WHERE meeting_id = ANY($1::uuid[]) RETURNING person_id)
     SELECT DISTINCT person_id FROM gone`,
    [meetingIds],
  );
  const people = rows.map((r) => r.person_id);
  await updateVoiceModels(tx, people, []);
  return people;
}

/**
 * Merging people: every sample of `fromId` becomes one of `intoId`, whose model is recounted from
 * all of them. The caller holds both people locked; `fromId` is deleted after, so its model is
 * left as it is.
 */
export async function moveVoiceSamples(tx: Queryable, fromId: string, intoId: string): Promise<void> {
  await tx.query('voice_sample.move_person', 'UPDATE voice_sample SET person_id = $2 WHERE person_id = $1', [
    fromId,
    intoId,
  ]);
  await updateVoiceModels(tx, [intoId], []);
}

const scaled = (meanText: string, n: number) =>
  pgvector.toSql((pgvector.fromSql(meanText) as number[]).map((x) => x * n));

/**
 * Recounts `recount` from their samples and adds each batch of `additions` to its person's
 * running sum, then derives voice_vector, voice_confidence and voice_model_status. The people are
 * locked first (in id order, so concurrent writers cannot deadlock on them) and only then read:
 * under READ COMMITTED a later statement sees every sample committed before the lock was granted,
 * and a concurrent writer adds its own batch after ours.
 */
async function updateVoiceModels(
  tx: Queryable,
  recount: string[],
  additions: { personId: string; n: number; sum: string }[],
): Promise<void> {
  const ids = [...new Set([...recount, ...additions.map((a) => a.personId)])];
  if (!ids.length) return;
  // guard: voice-model-people-lock | remove: FOR UPDATE | test: test/concurrency/speaker-identity.test.ts :: both appends' samples
  await tx.query('voice_model.lock', 'SELECT 1 FROM person WHERE id = ANY($1::uuid[]) ORDER BY id FOR UPDATE', [ids]);
  const sums = new Map<string, { n: number; sum: string | null; replace: boolean }>();
  for (const a of additions) sums.set(a.personId, { n: a.n, sum: a.sum, replace: false });
  if (recount.length) {
    const { rows } = await tx.query<{ person_id: string; n: number; mean: string }>(
      'voice_model.recount',
      'SELECT person_id, count(*)::int AS n, avg(embedding)::text AS mean FROM voice_sample WHERE person_id = ANY($1::uuid[]) GROUP BY person_id',
      [recount],
    );
    for (const id of recount) sums.set(id, { n: 0, sum: null, replace: true });
    for (const r of rows) sums.set(r.person_id, { n: r.n, sum: scaled(r.mean, r.n), replace: true });
  }
  const entries = [...sums.entries()];
  // One statement for every person: the new sum and count, and what follows from them.
  await tx.query(
    'voice_model.update',
    `WITH u AS (
       SELECT p.id,
              CASE WHEN u.replace THEN u.sum::vector ELSE coalesce(p.voice_sum, array_fill(0::real, ARRAY[${DIM}])::vector) + u.sum::vector END AS sum,
              CASE WHEN u.replace THEN u.n ELSE p.voice_sample_count + u.n END AS n
       FROM unnest($1::uuid[], $2::text[], $3::int[], $4::boolean[]) AS u(id, sum, n, replace) JOIN person p ON p.id = u.id)
     UPDATE person p SET
       voice_sum = CASE WHEN u.n > 0 THEN u.sum END,
       voice_sample_count = u.n,
       voice_vector = CASE WHEN u.n > 0 AND vector_norm(u.sum) > 0 THEN l2_normalize(u.sum) END,
       voice_confidence = CASE WHEN u.n > 0 AND vector_norm(u.sum) > 0 THEN round(least(1, vector_norm(u.sum) / u.n)::numeric, 6) END,
       -- Samples that cancel out exactly leave no direction: training, not ready.
       voice_model_status = CASE WHEN u.n = 0 THEN 'untrained' WHEN vector_norm(u.sum) > 0 THEN 'ready' ELSE 'training' END,
       updated_at = now()
     FROM u WHERE p.id = u.id`,
    [
      entries.map(([id]) => id),
      entries.map(([, s]) => s.sum),
      entries.map(([, s]) => s.n),
      entries.map(([, s]) => s.replace),
    ],
  );
}

export interface VoiceSample {
  meeting_id: string;
  segment_id: string;
  speaker_label: string | null;
  created_at: string;
}

/**
 * A person's samples, newest first (then by segment id). The cursor carries the last row's
 * created_at and segment id, so a page boundary holds even when that sample has been removed
 * since. The caller has checked the person is visible.
 */
export async function listVoiceSamples(
  q: Queryable,
  personId: string,
  f: { limit: number; cursor?: string },
): Promise<Page<VoiceSample>> {
  const [afterAt, afterId] = decodeCreatedCursor(f.cursor);
  const { rows } = await q.query<VoiceSample & { page_key: string }>(
    'voice_sample.list',
    `SELECT meeting_id, segment_id, speaker_label, created_at, ${createdKey()}
     FROM voice_sample
     WHERE person_id = $1
       AND ($2::timestamptz IS NULL OR (created_at, segment_id) < ($2::timestamptz, $3::uuid))
     ORDER BY created_at DESC, segment_id DESC LIMIT $4`,
    [personId, afterAt, afterId, f.limit + 1],
  );
  return toCreatedPage(rows, f.limit, (s) => s.segment_id);
}
