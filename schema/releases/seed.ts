// Representative data for a database of a released schema, written by the rules of that release:
// two users, a person whose voice model was built from two embeddings (rounds 1-2: a weighted
// mean and a count; round 3: from voice samples with a running sum), a meeting of 20 segments
// (10 attributed to that person through a label assignment, 9 of them with a usable embedding),
// a soft-deleted meeting, and a row in every other table.
import type pg from 'pg';

/** A released schema.sql kept as an upgrade fixture: the stop of main it shipped at. */
export interface Release {
  name: string;
  /** The main commit of the landed stop whose schema/schema.sql this is. */
  commit: string;
  /** Voice models kept as voice samples with a running sum (round 3 on). */
  voiceSamples: boolean;
}

export const RELEASES: Release[] = [
  { name: 'round-1', commit: '0786225', voiceSamples: false },
  { name: 'round-2', commit: '5ff947b', voiceSamples: false },
  { name: 'round-3', commit: 'd22eec2', voiceSamples: true },
];

export const releaseSqlPath = (r: Release) => new URL(`./${r.name}.sql`, import.meta.url);

const DIM = 192;
/** A deterministic embedding; seed 0 is the zero vector (no usable voice). */
export const embedding = (seed: number) => Array.from({ length: DIM }, (_, i) => (seed ? Math.sin(seed * (i + 1)) : 0));
const sql = (v: number[]) => `[${v.join(',')}]`;

export interface Seeded {
  alice: string;
  bob: string;
  person: string;
  /** The embeddings of the segments that are the person's voice samples under today's rules. */
  personSamples: number[][];
}

export async function seed(db: pg.Client, release: Release): Promise<Seeded> {
  const one = async (text: string, params: unknown[] = []) => (await db.query(text, params)).rows[0]?.id as string;
  const alice = await one(`INSERT INTO app_user (username, email, identity_id)
      VALUES ('alice', 'alice@example.test', 'sub-a') RETURNING id`);
  const bob = await one(`INSERT INTO app_user (username, email, identity_id)
      VALUES ('bob', 'bob@example.test', 'sub-b') RETURNING id`);
  const person = await one(
    `INSERT INTO person (user_id, display_name, email)
      VALUES ($1, 'Ann', 'ann@example.test') RETURNING id`,
    [alice],
  );
  await db.query(`INSERT INTO person (user_id, display_name) VALUES ($1, 'Ben')`, [bob]);
  await db.query('UPDATE app_user SET person_id = $1 WHERE id = $2', [person, alice]);
  await db.query(
    `INSERT INTO person_summary (person_id, author_id, summary)
      VALUES ($1, $2, 'runs the budget')`,
    [person, alice],
  );
  await db.query(`INSERT INTO tag (user_id, name) VALUES ($1, 'finance')`, [alice]);

  const meeting = await one(
    `INSERT INTO meeting (user_id, title, source_type, start_time, summary)
        VALUES ($1, 'Budget review', 'upload', now() - interval '1 day', 'numbers') RETURNING id`,
    [alice],
  );
  const deleted = await one(
    `INSERT INTO meeting (user_id, title, source_type, start_time, deleted_at)
        VALUES ($1, 'Old sync', 'recording', now() - interval '9 days', now()) RETURNING id`,
    [alice],
  );
  await one(
    `INSERT INTO meeting (user_id, title, source_type, start_time)
      VALUES ($1, 'Bob alone', 'text', now()) RETURNING id`,
    [bob],
  );
  await db.query(
    `INSERT INTO meeting_audio_file (meeting_id, storage_path)
      VALUES ($1, 'meetings/m/audio.wav')`,
    [meeting],
  );
  await db.query('INSERT INTO meeting_attendee (meeting_id, person_id) VALUES ($1, $2)', [meeting, person]);
  await db.query(
    `INSERT INTO meeting_speaker_label (meeting_id, speaker_label, person_id)
      VALUES ($1, 'S1', $2)`,
    [meeting, person],
  );

  const transcription = await one(
    `INSERT INTO transcription (meeting_id, status)
      VALUES ($1, 'completed') RETURNING id`,
    [meeting],
  );
  await db.query(
    `INSERT INTO transcription_status_history (transcription_id, status)
      VALUES ($1, 'pending'), ($1, 'completed')`,
    [transcription],
  );
  const personSamples: number[][] = [];
  const segments: string[] = [];
  // Segments 0-9: speaker S1, assigned to the person; 0-8 carry an embedding, 9 the zero vector.
  // Segments 10-19: speaker S2, unassigned, every other one with an embedding.
  for (let i = 0; i < 20; i++) {
    const mine = i < 10;
    const vector = mine ? embedding(i < 9 ? i + 1 : 0) : i % 2 ? embedding(100 + i) : null;
    if (mine && i < 9) personSamples.push(vector!);
    segments.push(
      await one(
        `INSERT INTO transcript_segment (transcription_id, person_id, speaker_label, text, start_ms, end_ms, feature_vector)
         VALUES ($1, $2, $3, $4, $5::numeric, $5::numeric + 900, $6) RETURNING id`,
        [
          transcription,
          mine ? person : null,
          mine ? 'S1' : 'S2',
          `budget line ${i} of the quarter`,
          i * 1000,
          vector && sql(vector),
        ],
      ),
    );
  }
  // The soft-deleted meeting: two attributed segments with embeddings (samples too: every segment counts).
  const deletedTranscription = await one(
    `INSERT INTO transcription (meeting_id, status)
      VALUES ($1, 'completed') RETURNING id`,
    [deleted],
  );
  for (const s of [41, 42]) {
    personSamples.push(embedding(s));
    await db.query(
      `INSERT INTO transcript_segment (transcription_id, person_id, speaker_label, text, start_ms, feature_vector)
          VALUES ($1, $2, 'A', 'old words', $3, $4)`,
      [deletedTranscription, person, s, sql(embedding(s))],
    );
  }
  await db.query(
    `INSERT INTO transcript_segment (transcription_id, speaker_label, text, start_ms)
      VALUES ($1, 'B', 'reply', 50)`,
    [deletedTranscription],
  );

  if (release.voiceSamples) {
    // Round 3: every sample recorded, the model their running sum (lib/repositories/voice-samples.ts).
    await db.query(
      `INSERT INTO voice_sample (segment_id, person_id, meeting_id, speaker_label, embedding)
       SELECT s.id, s.person_id, t.meeting_id, s.speaker_label, l2_normalize(s.feature_vector)
       FROM transcript_segment s JOIN transcription t ON t.id = s.transcription_id
       WHERE s.person_id IS NOT NULL AND vector_norm(s.feature_vector) > 0`,
    );
    await db.query(
      `WITH v AS (SELECT person_id, count(*)::int AS n, sum(embedding) AS s FROM voice_sample GROUP BY person_id)
       UPDATE person p SET voice_sum = v.s, voice_sample_count = v.n, voice_vector = l2_normalize(v.s),
         voice_confidence = round((vector_norm(v.s) / v.n)::numeric, 6), voice_model_status = 'ready'
       FROM v WHERE p.id = v.person_id`,
    );
  } else {
    // Rounds 1-2: the model refined from two embeddings (the label assignment's mean), counted.
    const mean = embedding(1).map((x, i) => (x + embedding(2)[i]) / 2);
    await db.query(
      `UPDATE person SET voice_vector = l2_normalize($1::vector), voice_sample_count = 2, voice_confidence = 0.8, voice_model_status = 'ready'
        WHERE id = $2`,
      [sql(mean), person],
    );
  }

  const topic = await one(
    `INSERT INTO topic (meeting_id, name, summary, is_final)
      VALUES ($1, 'Budget', 'the numbers', true) RETURNING id`,
    [meeting],
  );
  await db.query('INSERT INTO topic_segment (topic_id, segment_id) VALUES ($1, $2)', [topic, segments[0]]);
  const point = await one(
    `INSERT INTO talking_point (meeting_id, topic_id, content, is_final)
      VALUES ($1, $2, 'Cut travel spending', true) RETURNING id`,
    [meeting, topic],
  );
  await db.query('INSERT INTO talking_point_segment (talking_point_id, segment_id) VALUES ($1, $2)', [
    point,
    segments[1],
  ]);
  const task = await one(
    `INSERT INTO task (user_id, content, source, assigned_to, meeting_id)
      VALUES ($1, 'Send the budget', 'user', $2, $3) RETURNING id`,
    [alice, person, meeting],
  );
  await db.query(`INSERT INTO sub_task (task_id, content) VALUES ($1, 'Draft it')`, [task]);
  await db.query(
    `INSERT INTO note (user_id, content, subject_type, subject_id)
      VALUES ($1, 'Ann prefers email', 'PERSON', $2)`,
    [alice, person],
  );
  const thread = await one(
    `INSERT INTO ai_thread (user_id, context_type, context_id)
      VALUES ($1, 'MEETING', $2) RETURNING id`,
    [alice, meeting],
  );
  await db.query(
    `INSERT INTO chat_message (thread_id, role, content)
      VALUES ($1, 'user', 'What was decided?')`,
    [thread],
  );
  await db.query(
    `INSERT INTO recording (meeting_id, audio_version, transcription_id, state, encoding, max_duration_seconds, stopped_at, stop_reason)
                  VALUES ($1, 1, NULL, 'stopped', 'pcm_s16le', 3600, now(), 'user')`,
    [deleted],
  );
  await db.query(
    `INSERT INTO segment_manifest (meeting_id, start_sequence, end_sequence, started_at_ms, duration_ms, object_name, byte_count, crc32c)
                  VALUES ($1, 0, 49, 0, 5000, 'meetings/d/1/0-49', 160000, 'AAAAAA==')`,
    [deleted],
  );
  await db.query(
    `INSERT INTO recording_event_history (meeting_id, event_type)
      VALUES ($1, 'recording.started')`,
    [deleted],
  );
  await db.query(`INSERT INTO event_sequence (user_id, last_seq) VALUES ($1, 1)`, [alice]);
  await db.query(
    `INSERT INTO event_outbox (user_id, seq, event_type, payload)
      VALUES ($1, 1, 'EntityChanged', '{}')`,
    [alice],
  );
  await db.query(
    `INSERT INTO idempotency_record (principal, key, method, path, request_hash, state, expires_at)
                  VALUES ($1, gen_random_uuid(), 'POST', '/tasks', 'h', 'done', now() + interval '1 day')`,
    [alice],
  );
  return { alice, bob, person, personSamples };
}
