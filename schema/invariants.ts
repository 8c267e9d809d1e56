// The invariants of today's schema and decisions that an upgraded database must hold, as queries
// that return the offending rows (none when the invariant holds). Used by the upgrade test over
// every released schema and by bench:upgrade.
import type pg from 'pg';

const TOLERANCE = 1e-4;

export const INVARIANTS: Record<string, string> = {
  // Every constraint enforced on every row, every index usable.
  'constraints validated': `SELECT conrelid::regclass::text AS "table", conname FROM pg_constraint
                            WHERE connamespace = 'public'::regnamespace AND NOT convalidated`,
  'indexes valid': `SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
                    WHERE c.relnamespace = 'public'::regnamespace AND NOT (i.indisvalid AND i.indisready)`,
  // GET /search scans a user's segments by transcript_segment.user_id.
  'segment owners filled': `SELECT s.id FROM transcript_segment s JOIN transcription t ON t.id = s.transcription_id
                            JOIN meeting m ON m.id = t.meeting_id WHERE s.user_id IS DISTINCT FROM m.user_id`,
  // decisions.md section 6: the samples are exactly the attributed segments with a usable embedding.
  'every attributed embedding a sample': `
    SELECT s.id FROM transcript_segment s
    LEFT JOIN voice_sample v ON v.segment_id = s.id
    WHERE s.person_id IS NOT NULL AND vector_norm(s.feature_vector) > 0
      AND (v.segment_id IS NULL OR v.person_id <> s.person_id
           OR l2_distance(v.embedding, l2_normalize(s.feature_vector)) > ${TOLERANCE})`,
  'no sample without its attribution': `
    SELECT v.segment_id FROM voice_sample v JOIN transcript_segment s ON s.id = v.segment_id
    JOIN transcription t ON t.id = s.transcription_id
    WHERE s.person_id IS DISTINCT FROM v.person_id OR t.meeting_id <> v.meeting_id`,
  // voice_vector = normalise(Σ samples), voice_confidence = |Σ| / n, count = n; none: untrained.
  'voice models equal to their samples': `
    WITH v AS (SELECT person_id, count(*)::int AS n, sum(embedding) AS s FROM voice_sample GROUP BY person_id)
    SELECT p.id FROM person p LEFT JOIN v ON v.person_id = p.id
    WHERE p.voice_sample_count <> coalesce(v.n, 0)
       OR (v.n IS NULL AND (p.voice_vector IS NOT NULL OR p.voice_sum IS NOT NULL
                            OR p.voice_model_status <> 'untrained'))
       OR (v.n IS NOT NULL AND (p.voice_sum IS NULL OR p.voice_vector IS NULL OR p.voice_model_status <> 'ready'
           OR l2_distance(p.voice_sum, v.s) > ${TOLERANCE} * v.n
           OR l2_distance(p.voice_vector, l2_normalize(v.s)) > ${TOLERANCE}
           OR abs(p.voice_confidence - vector_norm(v.s) / v.n) > ${TOLERANCE}))`,
  // GET /search: each vector is its source's, as schema.sql's triggers compute it (the rule stated
  // here again, independently of the triggers and data steps that keep it).
  'search vectors current': `
    SELECT 'meeting' AS "table", id FROM meeting
      WHERE title_search IS DISTINCT FROM setweight(to_tsvector('english', title), 'A')
    UNION ALL SELECT 'transcript_segment', id FROM transcript_segment
      WHERE text_search IS DISTINCT FROM to_tsvector('english', text)
    UNION ALL SELECT 'talking_point', id FROM talking_point
      WHERE content_search IS DISTINCT FROM setweight(to_tsvector('english', content), 'B')
    UNION ALL SELECT 'note', id FROM note WHERE content_search IS DISTINCT FROM to_tsvector('english', content)`,
};

/** Every tsvector column of every table: a row whose vector is null is missing from search. */
async function searchVectorChecks(db: pg.Client): Promise<Record<string, string>> {
  const { rows } = await db.query<{ table: string; column: string }>(
    `SELECT table_name AS "table", column_name AS "column" FROM information_schema.columns
     WHERE table_schema = 'public' AND data_type = 'tsvector' ORDER BY 1, 2`,
  );
  return Object.fromEntries(
    rows.map((r) => [`${r.table}.${r.column} filled`, `SELECT ctid FROM "${r.table}" WHERE "${r.column}" IS NULL`]),
  );
}

/** The invariants that do not hold, each with up to 5 offending rows; {} when all hold. */
export async function brokenInvariants(db: pg.Client): Promise<Record<string, unknown[]>> {
  const broken: Record<string, unknown[]> = {};
  for (const [name, query] of Object.entries({ ...INVARIANTS, ...(await searchVectorChecks(db)) })) {
    const { rows } = await db.query(`SELECT * FROM (${query}) q LIMIT 5`);
    if (rows.length) broken[name] = rows;
  }
  return broken;
}

/** Row counts of every table of schema public. */
export async function rowCounts(db: pg.Client): Promise<Record<string, number>> {
  const { rows } = await db.query<{ name: string }>(
    // A partitioned table counts its partitions' rows; they are not counted again.
    `SELECT relname AS name FROM pg_class WHERE relnamespace = 'public'::regnamespace
       AND relkind IN ('r', 'p') AND NOT relispartition ORDER BY 1`,
  );
  const counts: Record<string, number> = {};
  for (const { name } of rows) {
    counts[name] = (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${name}"`)).rows[0].n;
  }
  return counts;
}
