// Races only a server with real concurrency can lose: the API (a pg pool of 10) on native
// PostgreSQL, many requests at once. PGlite runs one transaction at a time, so there these
// cannot interleave and the file is skipped with the reason printed.
import type { QueryResultRow } from 'pg';
import { createHash, randomUUID } from 'node:crypto';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { listManifest } from '@mi/lib/repositories/manifest';
import { startApi, type ApiHarness } from '../harness';
import { native, withNativeApi } from './native-api';
import { lockWaiters, lockWaits } from '../support/lock-waits';
import { createTake, framesBytes, stopTake, storeLiveSegment } from '../recording-fixtures';

let api: ApiHarness;
let alice: string;
let aliceId: string;
let dbUrl: string;

withNativeApi(async (started) => {
  api = started;
  alice = await api.token('alice');
  aliceId = await api.userId(alice);
  dbUrl = api.rt.db.pool.options.connectionString!;
});

const sql = async <R extends QueryResultRow = Record<string, unknown>>(text: string, params: unknown[] = []) =>
  (await api.rt.db.query<R>('test', text, params)).rows;

const statuses = (answers: { status: number }[]) => [...new Set(answers.map((a) => a.status))].sort();

describe.skipIf(!native)('idempotency under concurrency', () => {
  it('should run one effect for one Idempotency-Key fired 20 times at once; the rest are 409 or its replay', async () => {
    const key = randomUUID();
    const title = `once ${key}`;
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => api.post(alice, '/meetings', { title, source_type: 'text' }, key)),
    );
    expect(answers.every((a) => a.status === 201 || a.status === 409)).toBe(true);
    const created = answers.filter((a) => a.status === 201);
    expect(created.filter((a) => a.headers.get('idempotent-replayed') !== 'true')).toHaveLength(1);
    expect(new Set(created.map((a) => a.body.id)).size).toBe(1);
    expect(await sql('SELECT count(*)::int AS n FROM meeting WHERE title = $1', [title])).toEqual([{ n: 1 }]);
  });

  it('should answer 409 at once to a duplicate sent while the first still runs, and replay the first after', async () => {
    const key = randomUUID();
    const body = { title: `running ${key}`, source_type: 'text' };
    const outside = new pg.Client({ connectionString: dbUrl });
    await outside.connect();
    try {
      // The first request holds its claim while its meeting's insert waits for the user row.
      await outside.query('BEGIN');
      await outside.query('SELECT 1 FROM app_user WHERE id = $1 FOR UPDATE', [aliceId]);
      const first = api.post(alice, '/meetings', body, key);
      await lockWaits(api);
      let settled = false;
      const duplicate = api.post(alice, '/meetings', body, key).finally(() => (settled = true));
      // Answered, or (the failure) waiting on the first's uncommitted claim.
      await expect.poll(async () => settled || (await lockWaiters(api)) >= 2, { timeout: 20_000 }).toBe(true);
      await outside.query('COMMIT');
      const answer = await duplicate;
      expect(answer.status, answer.text).toBe(409);
      expect(answer.body.detail).toMatch(/still in progress/);
      const created = await first;
      expect(created.status, created.text).toBe(201);
      const replay = await api.post(alice, '/meetings', body, key);
      expect(replay.status).toBe(201);
      expect(replay.headers.get('idempotent-replayed')).toBe('true');
      expect(replay.text).toBe(created.text);
    } finally {
      await outside.end();
    }
    expect(await sql('SELECT count(*)::int AS n FROM meeting WHERE title = $1', [body.title])).toEqual([{ n: 1 }]);
  });

  it('should let one retry take over an abandoned claim while another retry does so', async () => {
    const key = randomUUID();
    const body = { title: `abandoned ${key}`, source_type: 'text' };
    const hash = createHash('sha256')
      .update(`POST /meetings\n${JSON.stringify(body)}`)
      .digest('hex');
    // A claim whose request died mid-flight three minutes ago: a retry may take it over.
    await sql(
      `INSERT INTO idempotency_record (principal, key, method, path, request_hash, state, expires_at, created_at)
       VALUES ($1, $2, 'POST', '/meetings', $3, 'in_flight', now() + interval '1 day', now() - interval '3 minutes')`,
      [aliceId, key, hash],
    );
    const outside = new pg.Client({ connectionString: dbUrl });
    await outside.connect();
    try {
      // Another retry has read the claim (locked) and is about to take it over. Only the read is
      // locked when ours starts: an uncommitted takeover would hold our claim's insert back instead.
      await outside.query('BEGIN');
      await outside.query('SELECT 1 FROM idempotency_record WHERE principal = $1 AND key = $2 FOR UPDATE', [
        aliceId,
        key,
      ]);
      const retry = api.post(alice, '/meetings', body, key);
      await lockWaits(api);
      await outside.query(`UPDATE idempotency_record SET created_at = now() WHERE principal = $1 AND key = $2`, [
        aliceId,
        key,
      ]);
      await outside.query('COMMIT');
      const answer = await retry;
      expect(answer.status, answer.text).toBe(409);
      expect(answer.body.detail).toMatch(/still in progress/);
    } finally {
      await outside.end();
    }
    expect(await sql('SELECT count(*)::int AS n FROM meeting WHERE title = $1', [body.title])).toEqual([{ n: 0 }]);
  });

  it('should store a gap-upload range once when the same upload arrives 20 times at once', async () => {
    const take = await createTake(api, alice);
    await storeLiveSegment(api, take, 0, 9);
    await storeLiveSegment(api, take, 20, 29);
    await stopTake(api, take);
    const bytes = framesBytes(10, 19);
    const path = `/meetings/${take.meetingId}/recording/audio/10-19?audio_version=${take.audioVersion}`;
    const answers = await Promise.all(
      Array.from({ length: 20 }, () =>
        api.request('PUT', path, { token: alice, raw: bytes, headers: { 'content-type': 'application/octet-stream' } }),
      ),
    );
    expect(answers.filter((a) => a.status >= 500)).toEqual([]);
    // The take's lock lets one store it; the others find the identical range (200) or wait (409).
    expect(answers.filter((a) => a.status === 201)).toHaveLength(1);
    for (const a of answers) expect([200, 201, 409]).toContain(a.status);
    const uploaded = await sql(
      `SELECT count(*)::int AS n FROM recording_event_history WHERE meeting_id = $1 AND event_type = 'gap_uploaded'`,
      [take.meetingId],
    );
    expect(uploaded).toEqual([{ n: 1 }]);
    const rows = (await listManifest(api.rt.db, take.meetingId, take.audioVersion)).filter(
      (r) => r.start_sequence <= 19 && r.end_sequence >= 10,
    );
    expect(rows.map((r) => [r.start_sequence, r.end_sequence])).toEqual([[10, 19]]);
  });
});

describe.skipIf(!native)("one user's event sequence", () => {
  it('should give 50 concurrent writers gapless, increasing seqs, in commit order', async () => {
    const [{ max: before }] = await sql<{ max: number }>(
      'SELECT coalesce(max(seq), 0)::int AS max FROM event_outbox WHERE user_id = $1',
      [aliceId],
    );
    const answers = await Promise.all(
      Array.from({ length: 50 }, (_, i) => api.post(alice, '/meetings', { title: `w${i}`, source_type: 'text' })),
    );
    expect(statuses(answers)).toEqual([201]);
    // The outbox row is updated once published; the meeting row keeps its creating transaction.
    const rows = await sql<{ seq: number; committed: string }>(
      `SELECT e.seq, pg_xact_commit_timestamp(m.xmin) AS committed FROM event_outbox e JOIN meeting m ON m.id = (e.payload->>'id')::uuid
       WHERE e.user_id = $1 AND e.seq > $2 ORDER BY e.seq`,
      [aliceId, before],
    );
    expect(rows.map((r) => r.seq)).toEqual(Array.from({ length: 50 }, (_, i) => before + 1 + i));
    // Replay (by seq) gives the events in the order their transactions committed.
    const committed = rows.map((r) => Date.parse(r.committed));
    expect(committed).toEqual([...committed].sort((a, b) => a - b));
  });
});

describe.skipIf(!native)('speaker labels and segment appends', () => {
  it('should attribute every appended segment of an assigned label, whatever commits first (10 rounds)', async () => {
    const person = await api.person(aliceId);
    for (let round = 0; round < 10; round++) {
      const m = await api.meeting(alice, 'recording');
      const t = (await api.post(alice, `/meetings/${m}/transcriptions`)).body.id;
      const appends = Array.from({ length: 6 }, (_, i) =>
        api.request('POST', `/transcriptions/${t}/segments`, {
          token: api.serviceToken,
          body: {
            segments: Array.from({ length: 20 }, (_, j) => ({
              speaker_label: 'S0',
              text: `r${round} a${i} s${j}`,
              start_ms: i * 100_000 + j * 1000,
            })),
          },
        }),
      );
      const assign = api.request('POST', `/meetings/${m}/speaker-labels`, {
        token: alice,
        body: { speaker_label: 'S0', person_id: person },
        headers: { 'idempotency-key': randomUUID() },
      });
      const answers = await Promise.all([assign, ...appends]);
      expect(answers.map((a) => a.status)).toEqual([200, 204, 204, 204, 204, 204, 204]);
      const unattributed = await sql(
        `SELECT count(*)::int AS n FROM transcript_segment WHERE transcription_id = $1 AND person_id IS DISTINCT FROM $2`,
        [t, person],
      );
      expect(unattributed, `round ${round}`).toEqual([{ n: 0 }]);
    }
  });
});

describe.skipIf(!native)('no lost update', () => {
  it('should keep every field of concurrent PATCHes of one task', async () => {
    const task = (await api.post(alice, '/tasks', { content: 'draft' })).body.id;
    const person = await api.person(aliceId);
    const m = await api.meeting(alice);
    const patches = [
      { content: 'final' },
      { status: 'completed' },
      { due_date: '2026-12-24' },
      { assigned_to: person },
      { meeting_id: m },
    ];
    const answers = await Promise.all(
      patches.map((body) => api.request('PATCH', `/tasks/${task}`, { token: alice, body })),
    );
    expect(statuses(answers)).toEqual([200]);
    const got = (await api.request('GET', `/tasks/${task}`, { token: alice })).body;
    expect(got).toMatchObject({
      content: 'final',
      status: 'completed',
      due_date: '2026-12-24',
      assigned_to: person,
      meeting_id: m,
    });
  });

  it('should let at most one of two opposite re-parentings win, so no cycle forms (20 rounds)', async () => {
    for (let round = 0; round < 20; round++) {
      const [a, b] = [
        (await api.post(alice, '/tasks', { content: `a${round}` })).body.id,
        (await api.post(alice, '/tasks', { content: `b${round}` })).body.id,
      ];
      const answers = await Promise.all([
        api.request('PATCH', `/tasks/${a}`, { token: alice, body: { parent_task_id: b } }),
        api.request('PATCH', `/tasks/${b}`, { token: alice, body: { parent_task_id: a } }),
      ]);
      expect(answers.map((x) => x.status).sort()).toEqual([200, 422]);
      const parents = await sql('SELECT id, parent_task_id FROM task WHERE id = ANY($1)', [[a, b]]);
      expect(parents.filter((p) => p.parent_task_id !== null)).toHaveLength(1);
    }
  });

  // Two moves that lock no row in common close a ring: with t1 under t2 and t3 under t0, moving t0
  // under t1 and t2 under t3 each pass their own ancestry check if neither sees the other. The
  // outside transaction holds alice's event sequence row, which both moves write last, so both are
  // inside their transactions, past any check they can make without the tree lock, before either commits.
  it('should refuse the second of two re-parentings that would close a ring between them', async () => {
    const t = [] as string[];
    for (let i = 0; i < 4; i++) t.push((await api.post(alice, '/tasks', { content: `ring ${i}` })).body.id);
    await sql('UPDATE task SET parent_task_id = $2 WHERE id = $1', [t[1], t[2]]);
    await sql('UPDATE task SET parent_task_id = $2 WHERE id = $1', [t[3], t[0]]);
    const outside = new pg.Client({ connectionString: dbUrl });
    await outside.connect();
    try {
      await outside.query('BEGIN');
      await outside.query('UPDATE event_sequence SET last_seq = last_seq WHERE user_id = $1', [aliceId]);
      const moves = [
        api.request('PATCH', `/tasks/${t[0]}`, { token: alice, body: { parent_task_id: t[1] } }),
        api.request('PATCH', `/tasks/${t[2]}`, { token: alice, body: { parent_task_id: t[3] } }),
      ];
      await lockWaits(api, 2);
      await outside.query('COMMIT');
      const answers = await Promise.all(moves);
      expect(answers.map((a) => a.status).sort(), answers.map((a) => a.text).join('\n')).toEqual([200, 422]);
      const parents = await sql('SELECT id FROM task WHERE id = ANY($1) AND parent_task_id IS NOT NULL', [t]);
      expect(parents.length).toBe(3);
    } finally {
      await outside.end();
    }
  });

  it('should answer 404 to a PATCH racing a DELETE of a task, never updating the deleted task', async () => {
    const task = (await api.post(alice, '/tasks', { content: 'doomed' })).body.id;
    const outside = new pg.Client({ connectionString: dbUrl });
    await outside.connect();
    try {
      // The delete's transaction holds the row; the PATCH starts while it is uncommitted.
      await outside.query('BEGIN');
      await outside.query('UPDATE task SET deleted_at = now() WHERE id = $1', [task]);
      const patch = api.request('PATCH', `/tasks/${task}`, { token: alice, body: { content: 'revived' } });
      await lockWaits(api);
      await outside.query('COMMIT');
      const answer = await patch;
      expect(answer.status, answer.text).toBe(404);
      expect(await sql('SELECT content FROM task WHERE id = $1', [task])).toEqual([{ content: 'doomed' }]);
    } finally {
      await outside.end();
    }
  });

  // The delete's transaction holds its row, uncommitted, while a task naming it is created; the
  // create waits for it (or, unguarded, is answered at once) and must then find it gone.
  const createRacingDelete = async (softDelete: string, id: string, ref: Record<string, string>) => {
    const outside = new pg.Client({ connectionString: dbUrl });
    await outside.connect();
    try {
      await outside.query('BEGIN');
      await outside.query(softDelete, [id]);
      let answered = false;
      const create = api.post(alice, '/tasks', { content: 'orphan?', ...ref }).finally(() => (answered = true));
      await expect.poll(async () => answered || (await lockWaiters(api)) > 0, { timeout: 20_000 }).toBe(true);
      await outside.query('COMMIT');
      const answer = await create;
      expect(answer.status, answer.text).toBe(422);
      expect(answer.body.errors!.map((e: { path: string }) => e.path)).toEqual(Object.keys(ref));
    } finally {
      await outside.end();
    }
  };

  it('should refuse a task naming a meeting whose delete commits while the task is created', async () => {
    const m = await api.meeting(alice, 'text');
    await createRacingDelete('UPDATE meeting SET deleted_at = now() WHERE id = $1', m, { meeting_id: m });
    expect(await sql('SELECT id FROM task WHERE meeting_id = $1', [m])).toEqual([]);
  });

  it('should refuse a subtask of a task whose delete commits while the subtask is created', async () => {
    const parent = (await api.post(alice, '/tasks', { content: 'parent' })).body.id;
    await createRacingDelete('UPDATE task SET deleted_at = now() WHERE id = $1', parent, { parent_task_id: parent });
    expect(await sql('SELECT id FROM task WHERE parent_task_id = $1', [parent])).toEqual([]);
  });

  it("should count both meetings' embeddings when one person's voice is refined from two meetings at once", async () => {
    const person = await api.person(aliceId);
    const vector = (seed: number) => Array.from({ length: 192 }, (_, i) => Math.sin(seed * (i + 1)));
    const meetings = await Promise.all(
      [1, 2].map(async (seed) => {
        const m = await api.meeting(alice, 'recording');
        const t = (await api.post(alice, `/meetings/${m}/transcriptions`)).body.id;
        const segments = Array.from({ length: 5 }, (_, j) => ({
          speaker_label: 'S0',
          text: 'x',
          start_ms: j * 1000,
          feature_vector: vector(seed * 10 + j),
        }));
        expect(
          (await api.request('POST', `/transcriptions/${t}/segments`, { token: api.serviceToken, body: { segments } }))
            .status,
        ).toBe(204);
        return m;
      }),
    );
    const answers = await Promise.all(
      meetings.map((m) =>
        api.request('POST', `/meetings/${m}/speaker-labels`, {
          token: alice,
          body: { speaker_label: 'S0', person_id: person },
          headers: { 'idempotency-key': randomUUID() },
        }),
      ),
    );
    expect(answers.map((a) => a.status)).toEqual([200, 200]);
    expect((await sql('SELECT voice_sample_count FROM person WHERE id = $1', [person]))[0].voice_sample_count).toBe(10);
  });
});

describe.skipIf(!native)('requests racing DELETE /me', () => {
  it('should answer 404 problem+json, never 422 or a constraint, when the account goes while a request writes', async () => {
    const token = await api.token(`racer-${randomUUID().slice(0, 8)}`);
    const userId = await api.userId(token);
    const meeting = await api.meeting(token);
    const outside = new pg.Client({ connectionString: dbUrl });
    await outside.connect();
    try {
      // Erasure's order: the user row locked, then the rows deleted. The requests were
      // authenticated before; their inserts wait for the user row, then find it gone.
      await outside.query('BEGIN');
      await outside.query('SELECT 1 FROM app_user WHERE id = $1 FOR UPDATE', [userId]);
      const create = api.post(token, '/meetings', { title: 'late', source_type: 'text' });
      await lockWaits(api);
      const task = api.post(token, '/tasks', { content: 'late', meeting_id: meeting });
      await lockWaits(api, 2);
      await outside.query('DELETE FROM meeting WHERE user_id = $1', [userId]);
      await outside.query('DELETE FROM app_user WHERE id = $1', [userId]);
      await outside.query('COMMIT');
      for (const res of [await create, await task]) {
        expect(res.status, res.text).toBe(404);
        expect(res.headers.get('content-type')).toContain('application/problem+json');
        expect(res.body.detail).not.toMatch(/_fkey|constraint|app_user|references/);
      }
    } finally {
      await outside.end();
    }
  });
});

describe.skipIf(!native)('serialization failures and deadlocks', () => {
  it('should retry a transaction chosen as a deadlock victim (40P01) and answer 200', async () => {
    const person = await api.person(aliceId);
    const m = await api.meeting(alice, 'recording');
    const t = (await api.post(alice, `/meetings/${m}/transcriptions`)).body.id;
    await api.request('POST', `/transcriptions/${t}/segments`, {
      token: api.serviceToken,
      body: { segments: [{ speaker_label: 'S0', text: 'x', start_ms: 0 }] },
    });
    const outside = new pg.Client({ connectionString: dbUrl });
    await outside.connect();
    try {
      const [{ deadlocks: before }] = (
        await outside.query('SELECT deadlocks::int FROM pg_stat_database WHERE datname = current_database()')
      ).rows;
      const retriesBefore = api.served.retries;
      // This session checks for deadlocks last, so the API's transaction is always the victim.
      await outside.query(`SET deadlock_timeout = '60s'`);
      await outside.query('BEGIN');
      await outside.query('SELECT 1 FROM person WHERE id = $1 FOR UPDATE', [person]);
      // The assignment locks the meeting, then waits for the person this transaction holds…
      const assign = api.request('POST', `/meetings/${m}/speaker-labels`, {
        token: alice,
        body: { speaker_label: 'S0', person_id: person },
        headers: { 'idempotency-key': randomUUID() },
      });
      await lockWaits(api);
      // …and this one now waits for the meeting: a cycle. The assignment's deadlock check runs
      // first (1 s against 60 s), so it is the victim; its retry then waits for us.
      const outsideWaits = outside.query('SELECT 1 FROM meeting WHERE id = $1 FOR UPDATE', [m]);
      await outsideWaits;
      await outside.query('COMMIT');
      const answer = await assign;
      expect(answer.status, answer.text).toBe(200);
      const [{ deadlocks: after }] = (
        await outside.query('SELECT deadlocks::int FROM pg_stat_database WHERE datname = current_database()')
      ).rows;
      expect(after).toBeGreaterThan(before);
      expect(api.served.retries).toBeGreaterThan(retriesBefore);
    } finally {
      await outside.end();
    }
  });

  it('should retry serialization failures (40001) and answer success or a clean 409, never a 500', async () => {
    const outside = new pg.Client({ connectionString: dbUrl });
    await outside.connect();
    const database = (await outside.query('SELECT current_database() AS d')).rows[0].d;
    // Every new transaction of this database runs REPEATABLE READ: concurrent updates of one row fail with 40001.
    await outside.query(`ALTER DATABASE ${database} SET default_transaction_isolation = 'repeatable read'`);
    const serializable = await startApi({}, { database: { url: dbUrl, close: async () => {} } });
    try {
      const token = await serializable.token('alice');
      const m = await serializable.meeting(token);
      const retriesBefore = serializable.served.retries;
      const answers = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          serializable.request('PATCH', `/meetings/${m}`, { token, body: { title: `t${i}` } }),
        ),
      );
      expect(answers.filter((a) => a.status !== 200 && a.status !== 409)).toEqual([]);
      for (const a of answers.filter((x) => x.status === 409))
        expect(a.body.detail).toBe('concurrent update; nothing was written, try again');
      expect(serializable.served.retries).toBeGreaterThan(retriesBefore);
      const winners = answers.filter((a) => a.status === 200).map((a) => a.body.title);
      expect(winners).toContain((await serializable.request('GET', `/meetings/${m}`, { token })).body.title);
    } finally {
      await serializable.close();
      await outside.query(`ALTER DATABASE ${database} RESET default_transaction_isolation`);
      await outside.end();
    }
  });
});
