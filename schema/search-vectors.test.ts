// The search vectors are plain columns kept by their tables' triggers (schema.sql), so that adding
// one never rewrites a table: every write path fills them, a text edit refreshes them, a relabel
// does not run the trigger, and the data step fills rows written before the column existed,
// through the trigger, to the value a new row gets.
import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { fileDatabase } from '../test/harness';
import type { TestDatabase } from '../test/support/database';
import { runDataSteps } from './data-steps';
import { brokenInvariants } from './invariants';

let database: TestDatabase;
let db: pg.Client;
let ids: { user: string; meeting: string; transcription: string; segment: string; note: string; point: string };
const one = async (sql: string, params: unknown[] = []) => (await db.query(sql, params)).rows[0].id as string;

beforeEach(async () => {
  database = await fileDatabase();
  db = new pg.Client({ connectionString: database.url });
  await db.connect();
  const user = await one(`INSERT INTO app_user (username, email) VALUES ('a', 'a@example.test') RETURNING id`);
  const meeting = await one(
    `INSERT INTO meeting (user_id, title, source_type, start_time)
      VALUES ($1, 'Budget review', 'upload', now()) RETURNING id`,
    [user],
  );
  const transcription = await one(
    `INSERT INTO transcription (meeting_id, status) VALUES ($1, 'completed') RETURNING id`,
    [meeting],
  );
  const segment = await one(
    `INSERT INTO transcript_segment (transcription_id, speaker_label, text, start_ms)
      VALUES ($1, 'S1', 'The hiring plans were approved', 0) RETURNING id`,
    [transcription],
  );
  const note = await one(`INSERT INTO note (user_id, content) VALUES ($1, 'Call the recruiters') RETURNING id`, [user]);
  const point = await one(
    `INSERT INTO talking_point (meeting_id, content) VALUES ($1, 'Quarterly targets') RETURNING id`,
    [meeting],
  );
  ids = { user, meeting, transcription, segment, note, point };
});
afterEach(async () => {
  await db.end();
  await database.close();
});

const vectors = async () =>
  (
    await db.query(
      `SELECT (SELECT title_search::text FROM meeting) AS meeting,
              (SELECT text_search::text FROM transcript_segment WHERE id = $1) AS segment,
              (SELECT content_search::text FROM note) AS note,
              (SELECT content_search::text FROM talking_point) AS point`,
      [ids.segment],
    )
  ).rows[0];

describe('search vectors kept by trigger', () => {
  it('should fill each vector on insert, weighted as search ranks it, and refresh it on a text edit', async () => {
    expect(await vectors()).toEqual({
      meeting: `'budget':1A 'review':2A`,
      segment: `'approv':5 'hire':2 'plan':3`,
      note: `'call':1 'recruit':3`,
      point: `'quarter':1B 'target':2B`,
    });
    await db.query(`UPDATE meeting SET title = 'Roadmap'`);
    await db.query(`UPDATE transcript_segment SET text = 'Churn is rising'`);
    await db.query(`UPDATE note SET content = 'Pricing'`);
    await db.query(`UPDATE talking_point SET content = 'Launch date'`);
    expect(await vectors()).toEqual({
      meeting: `'roadmap':1A`,
      segment: `'churn':1 'rise':3`,
      note: `'price':1`,
      point: `'date':2B 'launch':1B`,
    });
    expect(await brokenInvariants(db)).toEqual({});
  });

  it('should not run the segment trigger on a relabel, only on a text change', async () => {
    // Function call counts of this transaction (pg_stat_get_xact_function_calls needs track_functions).
    await db.query(`SET track_functions = 'pl'`);
    const person = await one(`INSERT INTO person (user_id, display_name) VALUES ($1, 'Ann') RETURNING id`, [ids.user]);
    await db.query('BEGIN');
    const calls = async () =>
      Number(
        (await db.query(`SELECT pg_stat_get_xact_function_calls('transcript_segment_derive'::regproc) AS n`)).rows[0]
          .n ?? 0,
      );
    await db.query('UPDATE transcript_segment SET person_id = $1, speaker_label = $2', [person, 'S2']);
    expect(await calls()).toBe(0);
    await db.query(`UPDATE transcript_segment SET text = 'Churn is down'`);
    expect(await calls()).toBe(1);
    await db.query('COMMIT');
  });

  it('should fill, through the triggers and in batches, the vectors of rows written before their columns', async () => {
    const fresh = await vectors();
    // As after the ADD COLUMN of an upgrade: the trigger runs on its source only, so this empties them.
    await db.query(`UPDATE meeting SET title_search = NULL`);
    await db.query(`UPDATE transcript_segment SET text_search = NULL`);
    await db.query(`UPDATE note SET content_search = NULL`);
    await db.query(`UPDATE talking_point SET content_search = NULL`);
    expect(Object.keys(await brokenInvariants(db))).toEqual(
      expect.arrayContaining(['meeting.title_search filled', 'transcript_segment.text_search filled']),
    );
    await db.query(
      `INSERT INTO transcript_segment (transcription_id, text, start_ms) VALUES ($1, 'A second segment', 1)`,
      [ids.transcription],
    );

    expect(await runDataSteps(db, 1)).toEqual({
      'meeting.title_search': 1,
      'transcript_segment.text_search': 1,
      'note.content_search': 1,
      'talking_point.content_search': 1,
    });
    expect(await vectors()).toEqual(fresh);
    expect(await brokenInvariants(db)).toEqual({});
    expect(await runDataSteps(db, 1)).toEqual({});
  });
});
