// `npm run bench:api`: REST performance on the local stack with the test engine's database
// (native PostgreSQL + pgvector when installed, else PGlite; TEST_DATABASE chooses) and emulators.
// Each figure has a baseline measured in the same run: the same work as raw SQL (segments,
// labels), an exact scan (voice matches), GET /healthz under the same load (meeting list).
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pgvector from 'pgvector';
import { mintDevToken } from '@mi/lib/adapters/auth';
import { startLocalStack } from '../emulators/stack';
import { createTestDatabase, startTestEngine } from '../test/support/database';
import { ms, percentile, table, writeSection, type Row } from './report';

const LIST_REQUESTS = Number(process.env.BENCH_LIST_REQUESTS ?? 2000);

const dataDir = mkdtempSync(path.join(tmpdir(), 'mi-bench-api-'));
const engine = await startTestEngine();
const database = await createTestDatabase(engine.engine);
const stack = await startLocalStack({
  ...process.env,
  APP_ENV: 'development',
  DATA_DIR: dataDir,
  CORE_PORT: '0',
  ML_PORT: '0',
  LOG_LEVEL: 'error',
  DATABASE_URL: database.url,
});
const { rt, url } = stack;
const db = rt.db;
const user = await mintDevToken(rt.config.IDENTITY_SECRET_KEY!, 'bench');
const service = rt.config.SERVICE_AUTH_TOKEN;

async function call(method: string, p: string, token: string, body?: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(url + p, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...headers,
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${p} → ${res.status} ${text.slice(0, 300)}`);
  return text ? JSON.parse(text) : undefined;
}
const timed = async (fn: () => Promise<unknown>) => {
  const t = performance.now();
  await fn();
  return performance.now() - t;
};
const median = (v: number[]) => percentile(v, 50);
function unit(v: number[]) {
  const n = Math.hypot(...v);
  return v.map((x) => x / n);
}
const randomVector = () => unit(Array.from({ length: 192 }, () => Math.random() * 2 - 1));

const rows: Row[] = [];
const meeting = await call(
  'POST',
  '/meetings',
  user,
  { title: 'bench', source_type: 'text' },
  { 'idempotency-key': randomUUID() },
);
const transcription = await call(
  'POST',
  `/meetings/${meeting.id}/transcriptions`,
  service,
  {},
  { 'idempotency-key': randomUUID() },
);

// 1. PUT 5,000 segments (one in ten with a feature vector, as the batch worker sends them).
const segments = Array.from({ length: 5000 }, (_, i) => ({
  speaker_label: `SPEAKER_${i % 4}`,
  text: `segment number ${i} with some words in it`,
  start_ms: i * 1000,
  end_ms: i * 1000 + 900,
  confidence: 0.9,
  feature_vector: i % 10 === 0 ? randomVector() : null,
}));
const putTimes: number[] = [];
for (let i = 0; i < 5; i++)
  putTimes.push(await timed(() => call('PUT', `/transcriptions/${transcription.id}/segments`, service, { segments })));
const rawTimes: number[] = [];
for (let i = 0; i < 5; i++) {
  rawTimes.push(
    await timed(() =>
      db.withTransaction(async (tx) => {
        await tx.query('bench.delete', 'DELETE FROM transcript_segment WHERE transcription_id = $1', [
          transcription.id,
        ]);
        await tx.query(
          'bench.insert',
          `INSERT INTO transcript_segment (transcription_id, speaker_label, text, start_ms, end_ms, confidence, feature_vector)
           SELECT $1, s.speaker_label, s.text, s.start_ms, s.end_ms, s.confidence, s.feature_vector::vector
           FROM json_to_recordset($2::json) AS s(speaker_label text, text text, start_ms numeric, end_ms numeric, confidence numeric, feature_vector text)`,
          [
            transcription.id,
            JSON.stringify(
              segments.map((s) => ({
                ...s,
                feature_vector: s.feature_vector ? pgvector.toSql(s.feature_vector) : null,
              })),
            ),
          ],
        );
      }),
    ),
  );
}
rows.push({
  measure: 'PUT 5,000 segments (median of 5)',
  result: ms(median(putTimes)),
  baseline: `raw SQL replace ${ms(median(rawTimes))}`,
  ratio: (median(putTimes) / median(rawTimes)).toFixed(2),
  target: '≤ 1 s',
});

// 2. Speaker-label assignment over 10,000 segments of one label.
await call('PUT', `/transcriptions/${transcription.id}/segments`, service, {
  segments: segments.map((s) => ({ ...s, speaker_label: 'SPEAKER_X' })),
});
await call('POST', `/transcriptions/${transcription.id}/segments`, service, {
  segments: segments.map((s) => ({ ...s, start_ms: s.start_ms + 5_000_000, speaker_label: 'SPEAKER_X' })),
});
const people = await Promise.all(
  ['Ada', 'Grace'].map((name) =>
    call(
      'POST',
      '/people',
      user,
      { display_name: `${name} ${randomUUID().slice(0, 4)}` },
      { 'idempotency-key': randomUUID() },
    ),
  ),
);
const labelTimes: number[] = [];
for (let i = 0; i < 6; i++) {
  const person = people[i % 2];
  labelTimes.push(
    await timed(() =>
      call(
        'POST',
        `/meetings/${meeting.id}/speaker-labels`,
        user,
        { speaker_label: 'SPEAKER_X', person_id: person.id },
        { 'idempotency-key': randomUUID() },
      ),
    ),
  );
}
const rawLabelTimes: number[] = [];
for (let i = 0; i < 6; i++) {
  rawLabelTimes.push(
    await timed(() =>
      db.query(
        'bench.relabel',
        'UPDATE transcript_segment SET person_id = $2 WHERE transcription_id = $1 AND speaker_label = $3',
        [transcription.id, people[i % 2].id, 'SPEAKER_X'],
      ),
    ),
  );
}
rows.push({
  measure: 'speaker-label assignment, 10,000 segments (median of 6)',
  result: ms(median(labelTimes)),
  baseline: `raw UPDATE ${ms(median(rawLabelTimes))}`,
  ratio: (median(labelTimes) / median(rawLabelTimes)).toFixed(2),
  target: '≤ 0.5 s',
});

// Voice matches have their own benchmark: bench/voice.ts.
const me = await call('GET', '/me', user);

// 3. GET /meetings under 32 concurrent clients (1,000 meetings of the user).
await db.query(
  'bench.meetings',
  `INSERT INTO meeting (user_id, title, source_type, start_time) SELECT $1, 'm' || n, 'text', now() - n * interval '1 minute' FROM generate_series(1, 1000) n`,
  [me.id],
);
async function load(p: string, token?: string) {
  const times: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (next++ < LIST_REQUESTS) {
        const t = performance.now();
        const res = await fetch(url + p, { headers: token ? { authorization: `Bearer ${token}` } : {} });
        await res.arrayBuffer();
        if (res.status !== 200) throw new Error(`${p} → ${res.status}`);
        times.push(performance.now() - t);
      }
    }),
  );
  return { times, rps: (times.length / (performance.now() - started)) * 1000 };
}
const list = await load('/meetings?limit=50', user);
const health = await load('/healthz');
rows.push({
  measure: `GET /meetings (50 per page) p50 / p99, 32 clients, ${LIST_REQUESTS} requests`,
  result: `${ms(percentile(list.times, 50))} / ${ms(percentile(list.times, 99))} (${list.rps.toFixed(0)} req/s)`,
  baseline: `GET /healthz p50 ${ms(percentile(health.times, 50))} (${health.rps.toFixed(0)} req/s)`,
  ratio: (percentile(list.times, 50) / percentile(health.times, 50)).toFixed(2),
  target: '',
});

const out = `Engine: ${engine.engine.label}.\n\n${table(rows)}\n\nRatio = result / baseline (lower is better; the baseline does the same work without HTTP, validation, events or idempotency). Voice matches: see their own section (npm run bench:voice).`;
console.log(out);
writeSection('API', out);
await stack.stop();
await database.close();
await engine.stop();
rmSync(dataDir, { recursive: true, force: true });
