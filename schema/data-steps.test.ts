// The data steps on native PostgreSQL: idempotent, and the voice recount interleaved with the
// service attributing a segment (lib/repositories/voice-samples.ts) in a transaction still open.
import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { syncVoiceSamples } from '@mi/lib/repositories/voice-samples';
import { fileDatabase } from '../test/harness';
import type { TestDatabase } from '../test/support/database';
import { runDataSteps } from './data-steps';
import { brokenInvariants } from './invariants';
import { embedding } from './releases/seed';

let database: TestDatabase;
const clients: pg.Client[] = [];
async function connect(): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: database.url });
  await c.connect();
  clients.push(c);
  return c;
}
let db: pg.Client;
let person: string;
let transcription: string;
const segments: string[] = [];
const vec = (seed: number) => `[${embedding(seed).join(',')}]`;

// A person whose model predates voice samples (count 2, no sum), three attributed segments with
// embeddings and none recorded, and a fourth segment not attributed yet.
beforeEach(async () => {
  database = await fileDatabase();
  db = await connect();
  const one = async (sql: string, params: unknown[] = []) => (await db.query(sql, params)).rows[0].id as string;
  const user = await one(`INSERT INTO app_user (username, email) VALUES ('a', 'a@example.test') RETURNING id`);
  person = await one(
    `INSERT INTO person (user_id, display_name, voice_vector, voice_sample_count, voice_model_status)
        VALUES ($1, 'Ann', $2, 2, 'ready') RETURNING id`,
    [user, vec(7)],
  );
  const meeting = await one(
    `INSERT INTO meeting (user_id, title, source_type, start_time)
      VALUES ($1, 'm', 'upload', now()) RETURNING id`,
    [user],
  );
  transcription = await one(
    `INSERT INTO transcription (meeting_id, status)
      VALUES ($1, 'completed') RETURNING id`,
    [meeting],
  );
  segments.length = 0;
  for (let i = 1; i <= 4; i++) {
    segments.push(
      await one(
        `INSERT INTO transcript_segment (transcription_id, person_id, speaker_label, text, start_ms, feature_vector)
            VALUES ($1, $2, 'S1', 'x', $3, $4) RETURNING id`,
        [transcription, i < 4 ? person : null, i, vec(i)],
      ),
    );
  }
});
afterEach(async () => {
  await Promise.allSettled(clients.splice(0).map((c) => c.end()));
  await database.close();
});

const model = async () =>
  (await db.query('SELECT voice_sample_count AS n, voice_model_status AS status FROM person WHERE id = $1', [person]))
    .rows[0];

describe('data steps', { timeout: 60_000 }, () => {
  it('should record the samples and recount the model once, then find nothing to do', async () => {
    expect(await runDataSteps(db, 2)).toEqual({ voice_sample: 3, 'person.voice_model': 1 });
    expect(await model()).toEqual({ n: 3, status: 'ready' });
    expect(await brokenInvariants(db)).toEqual({});
    expect(await runDataSteps(db, 2)).toEqual({});
  });

  it('should count a sample the service adds while the recount waits for the person, not lose it', async () => {
    // Samples recorded, but the model stale again (its sum lost): only the recount has work to do.
    await runDataSteps(db);
    await db.query('UPDATE person SET voice_sum = NULL WHERE id = $1', [person]);
    // The service attributes segment 4 and adds its sample to the person's model: not committed yet.
    const service = await connect();
    await service.query('BEGIN');
    await service.query('UPDATE transcript_segment SET person_id = $1 WHERE id = $2', [person, segments[3]]);
    const tx = { query: (_name: string, sql: string, params?: unknown[]) => service.query(sql, params) };
    await syncVoiceSamples(tx, { transcriptionId: transcription, segmentIds: [segments[3]] });

    const upgrade = await connect();
    const steps = runDataSteps(upgrade);
    // The recount reaches the person the service holds, and waits.
    await vi.waitFor(
      async () => {
        const { rows } = await db.query(
          `SELECT 1 FROM pg_stat_activity
            WHERE pid = $1 AND wait_event_type = 'Lock'`,
          [(upgrade as unknown as { processID: number }).processID],
        );
        expect(rows).toHaveLength(1);
      },
      { timeout: 30_000, interval: 20 },
    );
    await service.query('COMMIT');
    expect(await steps).toEqual({ 'person.voice_model': 1 });
    expect(await model()).toEqual({ n: 4, status: 'ready' });
    expect(await brokenInvariants(db)).toEqual({});
  });
});
