// Voice embeddings: the cosine-similarity search over people. (How a person's voice_vector is
// built from their samples: voice-samples.ts.)
import pgvector from 'pgvector';
import type { Config } from '../config';
import type { Database } from '../db/pool';
import { BRIEF_COLUMNS, type PersonBrief } from './people';

export interface VoiceMatch {
  person: PersonBrief;
  similarity: number;
}

/**
 * Users whose last search had to fall back to the exact scan: their people have no structure
 * the walk can use, so for a while their searches skip the walk (bounded map, oldest first out).
 */
const exactUntil = new Map<string, number>();
const EXACT_HINT_MS = 10 * 60_000;
const EXACT_HINT_USERS = 10_000;

function rememberExact(userId: string): void {
  exactUntil.delete(userId);
  exactUntil.set(userId, Date.now() + EXACT_HINT_MS);
  if (exactUntil.size > EXACT_HINT_USERS) exactUntil.delete(exactUntil.keys().next().value!);
}

export interface VoiceSearchSettings {
  /** hnsw.ef_search of the index walk. */
  efSearch: number;
  /** Below this similarity at the last rank, the walk's answer is not trusted: an exact scan answers. */
  exactBelowSimilarity: number;
}

export const voiceSearchSettings = (
  config: Pick<Config, 'VOICE_MATCH_EF_SEARCH' | 'VOICE_MATCH_EXACT_BELOW_SIMILARITY'>,
): VoiceSearchSettings => ({
  efSearch: config.VOICE_MATCH_EF_SEARCH,
  exactBelowSimilarity: config.VOICE_MATCH_EXACT_BELOW_SIMILARITY,
});

/**
 * The search statement. Ids and distances are sorted first and the person columns the API returns
 * are read for the `limit` winners only: an exact scan sorts every person, and carrying the wide
 * row through that sort cost it more than the bare scan (docs/decisions/0004-voice-match-plan.md).
 * The distance is computed once per row; ORDER BY its alias still walks the HNSW index.
 */
export const VOICE_MATCH_SQL = `SELECT p.*, m.distance FROM (
    SELECT id, voice_vector <=> $2::vector AS distance FROM person
    WHERE user_id = $1 AND voice_vector IS NOT NULL
    ORDER BY distance LIMIT $3) m
  CROSS JOIN LATERAL (SELECT ${BRIEF_COLUMNS} FROM person WHERE person.id = m.id) p
  ORDER BY m.distance`;

/** Transaction-local settings of the index walk ($1: ef_search as text). */
export const WALK_SETTINGS_SQL = `SELECT set_config('hnsw.ef_search', $1, true), set_config('hnsw.iterative_scan', 'strict_order', true)`;

/**
 * Transaction-local settings of the exact scan: no index scans (the winners' rows are then read
 * by bitmap scans of the primary key), and serial: a parallel scan per request costs more CPU
 * than it saves under concurrent load.
 */
export const EXACT_SETTINGS_SQL = `SELECT set_config('enable_indexscan', 'off', true), set_config('max_parallel_workers_per_gather', '0', true)`;

/**
 * The user's people with a voice_vector, most similar first. First the HNSW cosine index, the
 * user filter applied while the graph is walked (iterative scan, strict order) so a filtered walk
 * still yields `limit`. Where speakers form clusters, as real embeddings do, a modest ef_search
 * finds the true neighbours. Where the nearest people are all far (unstructured vectors, or a
 * voice unlike anyone's), the walk misses true neighbours, so then an exact scan answers, with
 * every neighbour found, and that user's next searches for a while go to it directly
 * (bench/voice.ts, BENCHMARKS.md).
 * A user with few people gets the planner's exact scan from the start (ANALYZE statistics).
 */
export async function findVoiceMatches(
  db: Database,
  userId: string,
  vector: number[],
  limit: number,
  settings: VoiceSearchSettings,
): Promise<VoiceMatch[]> {
  return (await findVoiceMatchesEach(db, userId, [vector], limit, settings))[0];
}

/**
 * findVoiceMatches for several vectors in one transaction (a meeting's speaker labels). Once one
 * search falls back to the exact scan, the rest of them do too, as the user's next requests would.
 */
export async function findVoiceMatchesEach(
  db: Database,
  userId: string,
  vectors: number[][],
  limit: number,
  settings: VoiceSearchSettings,
): Promise<VoiceMatch[][]> {
  const results = await db.withTransaction(async (tx) => {
    type Row = PersonBrief & { distance: number };
    const search = async (vector: number[]) =>
      (await tx.query<Row>('voice.matches', VOICE_MATCH_SQL, [userId, pgvector.toSql(vector), limit])).rows;
    let exact = (exactUntil.get(userId) ?? 0) > Date.now();
    if (exact) await tx.query('voice.exact_settings', EXACT_SETTINGS_SQL);
    else await tx.query('voice.scan_settings', WALK_SETTINGS_SQL, [String(settings.efSearch)]);
    const out: Row[][] = [];
    for (const vector of vectors) {
      const walked = await search(vector);
      const last = walked.at(-1);
      if (exact || !last || 1 - last.distance >= settings.exactBelowSimilarity) {
        out.push(walked);
        continue;
      }
      rememberExact(userId);
      exact = true;
      await tx.query('voice.exact_settings', EXACT_SETTINGS_SQL);
      out.push(await search(vector));
    }
    return out;
  });
  return results.map((rows) => rows.map(({ distance, ...person }) => ({ person, similarity: 1 - distance })));
}
