// Voice embeddings: the refinement formula and the cosine-similarity search over people.
import pgvector from 'pgvector';
import type { Database } from '../db/pool';
import { BRIEF_COLUMNS, type PersonBrief } from './people';

export interface VoiceModel {
  vector: number[];
  sample_count: number;
  confidence: number;
}

const dot = (a: number[], b: number[]) => a.reduce((s, x, i) => s + x * b[i], 0);
const norm = (v: number[]) => Math.sqrt(dot(v, v));

/**
 * Refines a voice model with a batch of segment embeddings, given as the sum of their
 * L2-normalised vectors (`batchSum`) and how many there were (decisions.md section 4):
 *   m = normalise(batchSum)                       the batch's normalised mean
 *   c = normalise(n·prev + k·m)                   previous vector weighted by its sample count n
 *   confidence = (n·(prev·c) + batchSum·c) / (n + k)
 * i.e. the mean cosine similarity of every contributing embedding to the new centroid, the
 * earlier ones represented by the previous vector. Null when the batch adds nothing.
 */
export function refineVoice(prev: { vector: number[] | null; sample_count: number }, batchSum: number[], k: number): VoiceModel | null {
  const sumNorm = norm(batchSum);
  if (k <= 0 || !(sumNorm > 0)) return null;
  const m = batchSum.map((x) => x / sumNorm);
  const n = prev.vector ? prev.sample_count : 0;
  const combined = prev.vector && n > 0 ? m.map((x, i) => n * prev.vector![i] + k * x) : m;
  const combinedNorm = norm(combined);
  const c = combinedNorm > 0 ? combined.map((x) => x / combinedNorm) : m;
  const agreement = (n > 0 ? n * dot(prev.vector!, c) : 0) + dot(batchSum, c);
  const confidence = Math.min(1, Math.max(0, agreement / (n + k)));
  return { vector: c, sample_count: n + k, confidence: Math.round(confidence * 1e6) / 1e6 };
}

export interface VoiceMatch {
  person: PersonBrief;
  similarity: number;
}

/**
 * The user's people with a voice_vector, most similar first. The planner picks by the user's
 * share of the rows (from ANALYZE statistics): an exact scan of a user with few people (their
 * (user_id, ...) index, then a sort), else the HNSW cosine index, the user filter applied while
 * the graph is walked (iterative scan, strict order) so a filtered walk still yields `limit`.
 */
export async function findVoiceMatches(db: Database, userId: string, vector: number[], limit: number): Promise<VoiceMatch[]> {
  return db.withTransaction(async (tx) => {
    // ef_search at pgvector's maximum: on 100,000 random vectors it finds 99.7% of the true
    // top 10 (m = 32, ef_construction = 200); at 400, 97.7% (bench/api.ts, BENCHMARKS.md).
    await tx.query(
      'voice.scan_settings',
      `SELECT set_config('hnsw.ef_search', '1000', true), set_config('hnsw.iterative_scan', 'strict_order', true)`,
    );
    const { rows } = await tx.query<PersonBrief & { similarity: number }>(
      'voice.matches',
      `SELECT ${BRIEF_COLUMNS}, 1 - (voice_vector <=> $2::vector) AS similarity FROM person
       WHERE user_id = $1 AND voice_vector IS NOT NULL
       ORDER BY voice_vector <=> $2::vector LIMIT $3`,
      [userId, pgvector.toSql(vector), limit],
    );
    return rows.map(({ similarity, ...person }) => ({ person, similarity }));
  });
}
