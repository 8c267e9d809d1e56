// Data steps db:apply runs after the schema change: values a declarative diff cannot produce for
// rows written before their column or table existed. Each step is idempotent (a no-op once done),
// so every apply runs them, and an apply cut short is finished by the next one. Row steps walk
// their table by primary key in batches, each its own short transaction: no lock is held on the
// table, and writers (live segment commits) go on between batches.
import type pg from 'pg';

/** A step over the rows of one table with $1 < id <= $2. Returns the rows it changed. */
interface RowStep {
  name: string;
  sql: string;
}

// A search vector is a plain column kept by its table's trigger (schema.sql): a generated one would
// rewrite the table under an exclusive lock when added. The backfill writes through the trigger
// (UPDATE OF its source), so schema.sql holds the one definition of each vector.
const searchVector = (table: string, column: string, source: string): RowStep => ({
  name: `${table}.${column}`,
  sql: `UPDATE ${table} SET ${source} = ${source} WHERE id > $1 AND id <= $2 AND ${column} IS NULL`,
});

/** Run in this order, table by table; each table is walked by primary key. */
const ROW_STEPS: Record<string, RowStep[]> = {
  meeting: [searchVector('meeting', 'title_search', 'title')],
  talking_point: [searchVector('talking_point', 'content_search', 'content')],
  note: [searchVector('note', 'content_search', 'content')],
  transcript_segment: [
    {
      // GET /search: the owner of the segment's meeting. New rows get it from the trigger, which
      // also fills text_search in this same write (text = text fires it): one write per row.
      name: 'transcript_segment.user_id',
      sql: `UPDATE transcript_segment s SET user_id = m.user_id, text = s.text
            FROM transcription t JOIN meeting m ON m.id = t.meeting_id
            WHERE s.id > $1 AND s.id <= $2 AND s.user_id IS NULL AND t.id = s.transcription_id`,
    },
    searchVector('transcript_segment', 'text_search', 'text'),
    {
      // decisions.md section 6: every segment attributed to a person with a non-zero embedding is
      // one of their voice samples, stored L2-normalised (as lib/repositories/voice-samples.ts records it).
      name: 'voice_sample',
      sql: `INSERT INTO voice_sample (segment_id, person_id, meeting_id, speaker_label, embedding)
            SELECT s.id, s.person_id, t.meeting_id, s.speaker_label, l2_normalize(s.feature_vector)
            FROM transcript_segment s JOIN transcription t ON t.id = s.transcription_id
            WHERE s.id > $1 AND s.id <= $2 AND s.person_id IS NOT NULL
              AND s.feature_vector IS NOT NULL AND vector_norm(s.feature_vector) > 0
              AND NOT EXISTS (SELECT 1 FROM voice_sample v WHERE v.segment_id = s.id)
            ON CONFLICT (segment_id) DO NOTHING`,
    },
  ],
};

// People whose stored voice model disagrees with their samples (a count or a sum missing).
const STALE_VOICES = `
  SELECT p.id FROM person p LEFT JOIN (SELECT person_id, count(*)::int AS n FROM voice_sample GROUP BY person_id) v
    ON v.person_id = p.id
  WHERE p.voice_sample_count <> coalesce(v.n, 0)
     OR (coalesce(v.n, 0) > 0 AND p.voice_sum IS NULL)
     OR (coalesce(v.n, 0) = 0 AND (p.voice_sum IS NOT NULL OR p.voice_vector IS NOT NULL
                                   OR p.voice_model_status <> 'untrained'))
  ORDER BY p.id`;

// Recounts people from their samples, by the rules of lib/repositories/voice-samples.ts. The people are
// locked first (in id order, as the service locks them), then read: a sample the service commits
// meanwhile is either counted here or added to the new sum by the service after this commits.
const RECOUNT_VOICES = `
  WITH v AS (
    SELECT p.id, count(s.embedding)::int AS n, sum(s.embedding) AS sum
    FROM person p LEFT JOIN voice_sample s ON s.person_id = p.id
    WHERE p.id = ANY($1::uuid[]) GROUP BY p.id)
  UPDATE person p SET
    voice_sum = CASE WHEN v.n > 0 THEN v.sum END,
    voice_sample_count = v.n,
    voice_vector = CASE WHEN v.n > 0 AND vector_norm(v.sum) > 0 THEN l2_normalize(v.sum) END,
    voice_confidence = CASE WHEN v.n > 0 AND vector_norm(v.sum) > 0
                            THEN round(least(1, vector_norm(v.sum) / v.n)::numeric, 6) END,
    voice_model_status = CASE WHEN v.n = 0 THEN 'untrained'
                              WHEN vector_norm(v.sum) > 0 THEN 'ready' ELSE 'training' END,
    updated_at = now()
  FROM v WHERE p.id = v.id`;

export const DATA_STEP_BATCH = 5000;

/** Runs every data step; returns the rows each changed (steps that changed none are left out). */
export async function runDataSteps(client: pg.Client, batch = DATA_STEP_BATCH): Promise<Record<string, number>> {
  const changed: Record<string, number> = {};
  const count = (name: string, n: number) => {
    if (n > 0) changed[name] = (changed[name] ?? 0) + n;
  };
  for (const [table, steps] of Object.entries(ROW_STEPS)) {
    let after = '00000000-0000-0000-0000-000000000000';
    for (;;) {
      const { rows } = await client.query<{ last: string }>(
        `SELECT id::text AS last FROM (SELECT id FROM ${table} WHERE id > $1 ORDER BY id LIMIT $2) b
         ORDER BY id DESC LIMIT 1`,
        [after, batch],
      );
      const last = rows[0]?.last;
      if (!last) break;
      for (const step of steps) count(step.name, (await client.query(step.sql, [after, last])).rowCount ?? 0);
      after = last;
    }
  }
  const stale = (await client.query<{ id: string }>(STALE_VOICES)).rows.map((r) => r.id);
  for (let i = 0; i < stale.length; i += batch) {
    const ids = stale.slice(i, i + batch);
    await client.query('BEGIN');
    try {
      // guard: data-step-voice-recount-lock | remove: FOR UPDATE | test: schema/data-steps.test.ts :: while the recount waits for the person
      await client.query('SELECT 1 FROM person WHERE id = ANY($1::uuid[]) ORDER BY id FOR UPDATE', [ids]);
      count('person.voice_model', (await client.query(RECOUNT_VOICES, [ids])).rowCount ?? 0);
      await client.query('COMMIT');
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {});
      throw err;
    }
  }
  return changed;
}
