// schema.sql against the spec, on the run's database engine over the pg wire protocol: every
// table and column with its type, every delete rule and unique key proven by doing it, the indexes the
// API's queries need, the HNSW voice search, and recording_event_history ordering.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fileDatabase } from './harness';
import type { TestDatabase } from './support/database';
import { QUERY_INDEXES, REFERENCES, TABLES } from '../schema/expected-shape';

let database: TestDatabase;
let db: pg.Client;

beforeAll(async () => {
  database = await fileDatabase();
  db = new pg.Client({ connectionString: database.url });
  await db.connect();
});
afterAll(async () => {
  await db?.end();
  await database?.close();
});

const vec = (seed = 1) => `[${Array.from({ length: 192 }, (_, i) => Math.sin(seed * (i + 1)).toFixed(6)).join(',')}]`;

async function insert(table: string, row: Record<string, unknown>): Promise<string> {
  const keys = Object.keys(row);
  const { rows } = await db.query(
    `INSERT INTO ${table} (${keys.join(', ')}) VALUES (${keys.map((_, i) => `$${i + 1}`).join(', ')}) RETURNING *`,
    Object.values(row),
  );
  return rows[0].id;
}

const count = async (table: string, where: string, params: unknown[]) =>
  Number((await db.query(`SELECT count(*) FROM ${table} WHERE ${where}`, params)).rows[0].count);
const value = async (sql: string, params: unknown[]) => (await db.query(sql, params)).rows[0];
const sqlstate = (p: Promise<unknown>) =>
  p.then(
    () => 'no error',
    (e: { code?: string }) => e.code,
  );

/** One user with a record in every table, so each delete rule can be observed. */
async function seedGraph() {
  const u = await insert('app_user', {
    username: 'u',
    email: `${randomUUID()}@example.com`,
    identity_id: randomUUID(),
  });
  const person = await insert('person', { user_id: u, display_name: 'Ada', voice_vector: vec() });
  await db.query('UPDATE app_user SET person_id = $1 WHERE id = $2', [person, u]);
  const summary = await insert('person_summary', { person_id: person, author_id: u, summary: 's' });
  const tag = await insert('tag', { user_id: u, name: 't' });
  const meeting = await insert('meeting', { user_id: u, title: 'm', source_type: 'recording', start_time: new Date() });
  await insert('meeting_audio_file', { meeting_id: meeting, storage_path: 'p' });
  await insert('meeting_attendee', { meeting_id: meeting, person_id: person });
  const transcription = await insert('transcription', { meeting_id: meeting, status: 'pending' });
  await insert('transcription_status_history', { transcription_id: transcription, status: 'pending' });
  const segment = await insert('transcript_segment', {
    transcription_id: transcription,
    person_id: person,
    text: 'hi',
    start_ms: 0,
  });
  await insert('segment_manifest', {
    meeting_id: meeting,
    start_sequence: 0,
    end_sequence: 19,
    started_at_ms: 0,
    duration_ms: 2000,
    object_name: 'o',
    byte_count: 1,
    crc32c: 'c',
  });
  await insert('meeting_speaker_label', { meeting_id: meeting, speaker_label: 'SPEAKER_0', person_id: person });
  await insert('recording_event_history', { meeting_id: meeting, event_type: 'started' });
  const topic = await insert('topic', { meeting_id: meeting, name: 'n', summary: 's' });
  await insert('topic_segment', { topic_id: topic, segment_id: segment });
  const talkingPoint = await insert('talking_point', { meeting_id: meeting, topic_id: topic, content: 'c' });
  await insert('talking_point_segment', { talking_point_id: talkingPoint, segment_id: segment });
  const task = await insert('task', { user_id: u, content: 'c', assigned_to: person, meeting_id: meeting });
  const childTask = await insert('task', { user_id: u, content: 'child', parent_task_id: task });
  const subTask = await insert('sub_task', { task_id: task, content: 'c', assigned_to: person });
  const note = await insert('note', { user_id: u, content: 'c', subject_type: 'PERSON', subject_id: person });
  const thread = await insert('ai_thread', { user_id: u, context_type: 'MEETING', context_id: meeting });
  await insert('chat_message', { thread_id: thread, role: 'user', content: 'c' });
  await insert('event_sequence', { user_id: u, last_seq: 1 });
  await insert('event_outbox', { user_id: u, seq: 1, event_type: 'EntityChanged', payload: {} });
  await insert('recording', {
    meeting_id: meeting,
    audio_version: 1,
    transcription_id: transcription,
    state: 'recording',
    encoding: 'pcm_s16le',
    max_duration_seconds: 60,
  });
  return {
    u,
    person,
    summary,
    tag,
    meeting,
    transcription,
    segment,
    topic,
    talkingPoint,
    task,
    childTask,
    subTask,
    note,
    thread,
  };
}

describe('schema shape', () => {
  it('should have exactly the spec tables and columns, with their types, required flags and defaults', async () => {
    const { rows } = await db.query(`
      SELECT c.table_name, c.column_name, c.is_nullable, c.column_default, c.is_identity,
             format_type(a.atttypid, a.atttypmod) AS type
      FROM information_schema.columns c
      JOIN pg_attribute a ON a.attrelid = ('public.' || quote_ident(c.table_name))::regclass AND a.attname = c.column_name
      JOIN pg_class t ON t.oid = a.attrelid
      WHERE c.table_schema = 'public' AND NOT t.relispartition`);
    const actual: Record<string, string[]> = {};
    for (const r of rows) {
      const type = r.type.replace('timestamp with time zone', 'timestamptz');
      const def = r.is_identity === 'YES' ? 'identity' : r.column_default?.replace(/::[\w ]+$/, '');
      const column = `${r.column_name} ${type}${r.is_nullable === 'NO' ? ' required' : ''}${def ? ` = ${def}` : ''}`;
      (actual[r.table_name] ??= []).push(column);
    }
    const sorted = (t: Record<string, string[]>) =>
      Object.fromEntries(
        Object.entries(t)
          .map(([k, v]) => [k, [...v].sort()])
          .sort(),
      );
    expect(sorted(actual)).toEqual(sorted(TABLES));
  });

  it('should have every reference with the delete rule the spec states, and no other', async () => {
    const { rows } = await db.query(`
      SELECT con.conrelid::regclass::text AS tbl, a.attname AS col, con.confrelid::regclass::text AS parent,
             CASE con.confdeltype WHEN 'c' THEN 'CASCADE' WHEN 'n' THEN 'SET NULL' ELSE con.confdeltype::text END AS rule
      FROM pg_constraint con JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = con.conkey[1]
      WHERE con.contype = 'f' AND con.connamespace = 'public'::regnamespace AND con.conparentid = 0`);
    expect(rows.map((r) => `${r.tbl}.${r.col} -> ${r.parent}: ${r.rule}`).sort()).toEqual([...REFERENCES].sort());
  });

  it('should index every reference column, so cascades do not scan', async () => {
    const { rows } = await db.query(`
      SELECT con.conrelid::regclass::text AS tbl, a.attname AS col
      FROM pg_constraint con JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = con.conkey[1]
      WHERE con.contype = 'f' AND con.connamespace = 'public'::regnamespace
        AND NOT EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = con.conrelid AND i.indkey[0] = con.conkey[1])`);
    expect(rows).toEqual([]);
  });

  it.each(QUERY_INDEXES)('should have an index for %s', async (expected) => {
    const [, table, rest] = /^(\w+) (.*)$/.exec(expected)!;
    const needle = `ON public.${table} ${rest.startsWith('USING') ? rest : `USING btree ${rest}`}`;
    const { rows } = await db.query(`SELECT indexdef FROM pg_indexes WHERE schemaname = 'public' AND tablename = $1`, [
      table,
    ]);
    // A partitioned table's index is defined ON ONLY the parent (each partition has its own).
    const defs = rows.map((r) => (r.indexdef as string).replace(' ON ONLY ', ' ON '));
    expect(defs.some((d) => d.includes(needle))).toBe(true);
  });
});

describe('delete rules', () => {
  it('should cascade or clear the references of a deleted person', async () => {
    const g = await seedGraph();
    await db.query('DELETE FROM person WHERE id = $1', [g.person]);
    expect(await value('SELECT person_id FROM app_user WHERE id = $1', [g.u])).toEqual({ person_id: null });
    expect(await count('person_summary', 'person_id = $1', [g.person])).toBe(0);
    expect(await count('meeting_attendee', 'person_id = $1', [g.person])).toBe(0);
    expect(await count('meeting_speaker_label', 'person_id = $1', [g.person])).toBe(0);
    expect(await value('SELECT person_id FROM transcript_segment WHERE id = $1', [g.segment])).toEqual({
      person_id: null,
    });
    expect(await value('SELECT assigned_to FROM task WHERE id = $1', [g.task])).toEqual({ assigned_to: null });
    expect(await value('SELECT assigned_to FROM sub_task WHERE id = $1', [g.subTask])).toEqual({ assigned_to: null });
  });

  it('should cascade or clear the references of a deleted meeting', async () => {
    const g = await seedGraph();
    await db.query('DELETE FROM meeting WHERE id = $1', [g.meeting]);
    for (const table of [
      'meeting_audio_file',
      'meeting_attendee',
      'transcription',
      'segment_manifest',
      'meeting_speaker_label',
      'recording_event_history',
      'topic',
      'talking_point',
      'recording',
    ]) {
      expect(await count(table, 'meeting_id = $1', [g.meeting]), table).toBe(0);
    }
    expect(await count('transcription_status_history', 'transcription_id = $1', [g.transcription])).toBe(0);
    expect(await count('transcript_segment', 'transcription_id = $1', [g.transcription])).toBe(0);
    expect(await value('SELECT meeting_id FROM task WHERE id = $1', [g.task])).toEqual({ meeting_id: null });
  });

  it('should cascade or clear the references of a deleted transcription', async () => {
    const g = await seedGraph();
    await db.query('DELETE FROM transcription WHERE id = $1', [g.transcription]);
    expect(await count('transcription_status_history', 'transcription_id = $1', [g.transcription])).toBe(0);
    expect(await count('transcript_segment', 'id = $1', [g.segment])).toBe(0);
    expect(await value('SELECT transcription_id FROM recording WHERE meeting_id = $1', [g.meeting])).toEqual({
      transcription_id: null,
    });
  });

  it('should cascade or clear the references of a deleted topic and talking point', async () => {
    const g = await seedGraph();
    await db.query('DELETE FROM topic WHERE id = $1', [g.topic]);
    expect(await count('topic_segment', 'topic_id = $1', [g.topic])).toBe(0);
    expect(await value('SELECT topic_id FROM talking_point WHERE id = $1', [g.talkingPoint])).toEqual({
      topic_id: null,
    });
    await db.query('DELETE FROM talking_point WHERE id = $1', [g.talkingPoint]);
    expect(await count('talking_point_segment', 'talking_point_id = $1', [g.talkingPoint])).toBe(0);
  });

  it('should delete child tasks and sub-tasks with their task', async () => {
    const g = await seedGraph();
    await db.query('DELETE FROM task WHERE id = $1', [g.task]);
    expect(await count('task', 'id = $1', [g.childTask])).toBe(0);
    expect(await count('sub_task', 'id = $1', [g.subTask])).toBe(0);
  });

  it('should delete chat messages with their thread', async () => {
    const g = await seedGraph();
    await db.query('DELETE FROM ai_thread WHERE id = $1', [g.thread]);
    expect(await count('chat_message', 'thread_id = $1', [g.thread])).toBe(0);
  });

  it('should delete everything a user owns with the user, including summaries they wrote about others', async () => {
    const g = await seedGraph();
    const other = await insert('app_user', { username: 'v', email: `${randomUUID()}@example.com` });
    const othersPerson = await insert('person', { user_id: other, display_name: 'Bo' });
    const authored = await insert('person_summary', { person_id: othersPerson, author_id: g.u, summary: 's' });
    await db.query('DELETE FROM app_user WHERE id = $1', [g.u]);
    for (const table of ['person', 'tag', 'meeting', 'task', 'note', 'ai_thread', 'event_sequence', 'event_outbox']) {
      expect(await count(table, 'user_id = $1', [g.u]), table).toBe(0);
    }
    expect(await count('person_summary', 'id = $1', [authored])).toBe(0);
    expect(await count('person', 'id = $1', [othersPerson])).toBe(1);
  });
});

describe('constraints', () => {
  it('should keep email (case-insensitively) and identity_id unique across users (many users may lack an identity_id)', async () => {
    const email = `${randomUUID()}@example.com`;
    const identity = randomUUID();
    await insert('app_user', { username: 'a', email, identity_id: identity });
    expect(await sqlstate(insert('app_user', { username: 'b', email }))).toBe('23505');
    expect(await sqlstate(insert('app_user', { username: 'b', email: email.toUpperCase() }))).toBe('23505');
    expect(
      await sqlstate(insert('app_user', { username: 'b', email: `${randomUUID()}@x.com`, identity_id: identity })),
    ).toBe('23505');
    expect(await sqlstate(insert('app_user', { username: 'c', email: `${randomUUID()}@x.com` }))).toBe('no error');
    expect(await sqlstate(insert('app_user', { username: 'd', email: `${randomUUID()}@x.com` }))).toBe('no error');
  });

  it('should keep display_name unique per user only', async () => {
    const g = await seedGraph();
    expect(await sqlstate(insert('person', { user_id: g.u, display_name: 'Ada' }))).toBe('23505');
    const other = await insert('app_user', { username: 'v', email: `${randomUUID()}@example.com` });
    expect(await sqlstate(insert('person', { user_id: other, display_name: 'Ada' }))).toBe('no error');
  });

  it('should keep a manifest range unique per meeting, audio version and creation time', async () => {
    const g = await seedGraph();
    // The partitioned manifest's key holds its partition key (created_at); a writer finds a range
    // stored at another time under the take's row lock (lib/repositories/manifest.ts).
    const { created_at } = await value('SELECT created_at::text FROM segment_manifest WHERE meeting_id = $1', [
      g.meeting,
    ]);
    const row = {
      created_at,
      meeting_id: g.meeting,
      start_sequence: 0,
      end_sequence: 19,
      started_at_ms: 0,
      duration_ms: 2000,
      object_name: 'o2',
      byte_count: 1,
      crc32c: 'c',
    };
    expect(await sqlstate(insert('segment_manifest', row))).toBe('23505');
    expect(await sqlstate(insert('segment_manifest', { ...row, audio_version: 2 }))).toBe('no error');
  });

  it('should keep event seq unique per user and idempotency keys unique per principal', async () => {
    const g = await seedGraph();
    // The partitioned outbox's key holds its partition key (created_at); seqs themselves come from
    // the user's locked event_sequence row (lib/events/outbox.ts), so a writer never repeats one.
    const again = `INSERT INTO event_outbox (user_id, seq, event_type, payload, created_at)
      SELECT user_id, seq, 'x', '{}', created_at FROM event_outbox WHERE user_id = $1`;
    expect(await sqlstate(db.query(again, [g.u]))).toBe('23505');
    const record = {
      principal: g.u,
      key: randomUUID(),
      method: 'POST',
      path: '/tasks',
      request_hash: 'h',
      state: 'in_flight',
      expires_at: new Date(),
    };
    await insert('idempotency_record', record);
    expect(await sqlstate(insert('idempotency_record', record))).toBe('23505');
    expect(await sqlstate(insert('idempotency_record', { ...record, principal: 'service' }))).toBe('no error');
  });

  it.each([
    ['transcription', 'status', 'done'],
    ['person', 'voice_model_status', 'trained'],
    ['task', 'status', 'open'],
    ['sub_task', 'status', 'open'],
    ['chat_message', 'role', 'bot'],
    ['note', 'subject_type', 'TASK'],
    ['ai_thread', 'context_type', 'TASK'],
    ['recording', 'state', 'paused'],
  ])('should reject %s.%s = %s', async (table, column, bad) => {
    const g = await seedGraph();
    const rowOf: Record<string, [string, string]> = {
      transcription: ['id', g.transcription],
      person: ['id', g.person],
      task: ['id', g.task],
      sub_task: ['id', g.subTask],
      chat_message: ['thread_id', g.thread],
      note: ['id', g.note],
      ai_thread: ['id', g.thread],
      recording: ['meeting_id', g.meeting],
    };
    const [key, id] = rowOf[table];
    expect(await sqlstate(db.query(`UPDATE ${table} SET ${column} = $1 WHERE ${key} = $2`, [bad, id]))).toBe('23514');
  });

  it('should reject values outside the enumerations and vectors of another dimension', async () => {
    const g = await seedGraph();
    expect(await sqlstate(db.query(`UPDATE meeting SET source_type = 'video' WHERE id = $1`, [g.meeting]))).toBe(
      '22P02',
    );
    expect(await sqlstate(db.query(`UPDATE task SET source = 'ml' WHERE id = $1`, [g.task]))).toBe('22P02');
    expect(await sqlstate(db.query(`UPDATE person SET voice_vector = '[1,2,3]' WHERE id = $1`, [g.person]))).toBe(
      '22000',
    );
  });
});

describe('voice search', () => {
  it('should use the HNSW index for a cosine nearest-neighbour query', async () => {
    const u = await insert('app_user', { username: 'hnsw', email: `${randomUUID()}@example.com` });
    for (let i = 0; i < 40; i++)
      await insert('person', { user_id: u, display_name: `p${i}`, voice_vector: vec(i + 2) });
    await db.query('BEGIN');
    try {
      // SET LOCAL: pglite-socket shares one session between connections.
      await db.query('SET LOCAL enable_seqscan = off');
      const plan = await db.query(`EXPLAIN SELECT id FROM person ORDER BY voice_vector <=> $1 LIMIT 10`, [vec(7)]);
      expect(plan.rows.map((r) => r['QUERY PLAN']).join('\n')).toMatch(/Index Scan using person_voice_vector_idx/);
      const { rows } = await db.query(
        `SELECT display_name FROM person WHERE user_id = $2 ORDER BY voice_vector <=> $1 LIMIT 10`,
        [vec(7), u],
      );
      expect(rows[0].display_name).toBe('p5'); // the identical vector is the nearest
    } finally {
      await db.query('COMMIT');
    }
  });
});

describe('recording_event_history', () => {
  it('should order events of one transaction by seq, each with its own clock time', async () => {
    const g = await seedGraph();
    await db.query('BEGIN');
    const txStart = (await db.query(`SELECT now()::text AS t`)).rows[0].t;
    for (const type of ['a', 'b', 'c']) {
      // PGlite's clock ticks in milliseconds: wait one tick so each insert sees a new clock time.
      await db.query('SELECT pg_sleep(0.002)');
      await insert('recording_event_history', { meeting_id: g.meeting, event_type: type });
    }
    await db.query('COMMIT');
    const { rows } = await db.query(
      `SELECT event_type, seq, created_at::text AS created_at FROM recording_event_history WHERE meeting_id = $1 AND event_type IN ('a', 'b', 'c') ORDER BY seq`,
      [g.meeting],
    );
    expect(rows.map((r) => r.event_type)).toEqual(['a', 'b', 'c']);
    expect(Number(rows[1].seq)).toBeGreaterThan(Number(rows[0].seq));
    expect(Number(rows[2].seq)).toBeGreaterThan(Number(rows[1].seq));
    expect(new Set([txStart, ...rows.map((r) => r.created_at)]).size).toBe(4);
  });

  it('should not let a caller choose seq', async () => {
    const g = await seedGraph();
    expect(await sqlstate(insert('recording_event_history', { meeting_id: g.meeting, event_type: 'x', seq: 1 }))).toBe(
      '428C9',
    );
  });
});
