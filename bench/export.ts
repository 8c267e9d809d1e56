// `npm run bench:export`: one account export of an account with BENCH_EXPORT_MEETINGS meetings
// (default 100) holding BENCH_EXPORT_AUDIO_HOURS of live PCM audio in all (default 10, at 16 kHz:
// 1.15 GB), each meeting with a transcript (a segment per 5 s), stored as the live service stores
// a take (10 s segment objects and their manifest rows) in the GCS emulator (objects on disk).
// The exporter runs the sweep's builder in a process of its own (bench/export-worker.ts):
// archive time, MB/s, its peak RSS over its RSS at rest, CPU per GB, and one export's cost at
// list prices. Scale it down for a quick run: BENCH_EXPORT_AUDIO_HOURS=0.5 BENCH_EXPORT_MEETINGS=10.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createObjectStore } from '@mi/lib/adapters/storage';
import { createDatabase } from '@mi/lib/db/pool';
import { segmentObjectName } from '@mi/lib/objects/take-objects';
import { getExport } from '@mi/lib/repositories/account-exports';
import { startGcsEmulator } from '../emulators/gcs/server';
import { loadOrCreateSignerKey } from '../emulators/gcs/signer-key';
import { createTestDatabase, startTestEngine } from '../test/support/database';
import { table, writeSection } from './report';

const MEETINGS = Number(process.env.BENCH_EXPORT_MEETINGS ?? 100);
const AUDIO_HOURS = Number(process.env.BENCH_EXPORT_AUDIO_HOURS ?? 10);
const SAMPLE_RATE = 16_000;
const SEGMENT_SECONDS = 10;
const FRAMES_PER_SECOND = 10; // the live protocol's 100 ms frames
const BYTES_PER_SECOND = SAMPLE_RATE * 2;
const secondsPerMeeting = Math.round((AUDIO_HOURS * 3600) / MEETINGS);
const segmentsPerMeeting = Math.ceil(secondsPerMeeting / SEGMENT_SECONDS);

// List prices (USD, us-central1, tier 1, November 2026): Cloud Run functions (request-billed
// CPU and memory), Cloud Storage Standard (operations, storage), internet egress to the user.
const PRICE = {
  vcpuSecond: 0.000024,
  gibSecond: 0.0000025,
  classAPer1000: 0.005, // writes: each resumable-upload request
  classBPer1000: 0.0004, // reads: one GET per segment object
  gbMonth: 0.02,
  egressPerGb: 0.12,
};
const FUNCTION_MEMORY_GIB = 0.5;

const engine = await startTestEngine();
const database = await createTestDatabase(engine.engine);
const db = createDatabase(database.url, { max: 4 });
const work = mkdtempSync(path.join(tmpdir(), 'bench-export-'));
const signerKeyFile = path.join(work, 'signer.json');
const signer = loadOrCreateSignerKey(signerKeyFile);
const gcs = await startGcsEmulator({ dataDir: path.join(work, 'gcs'), trustedKeys: [signer] });
const bucket = 'bench-export';
const store = createObjectStore({ bucket, emulatorHost: gcs.url, signerKeyFile });
await store.ensureBucket();

// The account: meetings with a finalized PCM take each, its segment objects and manifest rows, a transcript.
const t0 = performance.now();
const { rows: users } = await db.query<{ id: string }>(
  'bench.user',
  `INSERT INTO app_user (username, email) VALUES ('bench', 'bench@bench.invalid') RETURNING id`,
  [],
);
const userId = users[0].id;
const segmentBytes = SEGMENT_SECONDS * BYTES_PER_SECOND;
const pcm = Buffer.alloc(segmentBytes);
for (let i = 0; i < segmentBytes; i += 2) pcm.writeInt16LE(Math.round(8000 * Math.sin(i / 20)), i);
let audioBytes = 0;
for (let m = 0; m < MEETINGS; m++) {
  const { rows } = await db.query<{ meeting_id: string; transcription_id: string }>(
    'bench.meeting',
    `WITH m AS (INSERT INTO meeting (user_id, title, source_type, start_time) VALUES ($1, 'Meeting ' || $2, 'recording', now() - make_interval(days => $2::int)) RETURNING id),
          t AS (INSERT INTO transcription (meeting_id, status) SELECT id, 'completed' FROM m RETURNING id, meeting_id),
          r AS (INSERT INTO recording (meeting_id, audio_version, transcription_id, state, encoding, sample_rate, max_duration_seconds, stopped_at, finalized_at)
                SELECT meeting_id, 1, id, 'finalized', 'pcm_s16le', $3, 14400, now(), now() FROM t RETURNING meeting_id)
     SELECT t.meeting_id, t.id AS transcription_id FROM t`,
    [userId, m, SAMPLE_RATE],
  );
  const { meeting_id: meetingId, transcription_id: transcriptionId } = rows[0];
  await db.query(
    'bench.transcript',
    `INSERT INTO transcript_segment (transcription_id, speaker_label, text, start_ms, end_ms)
     SELECT $1, 'SPEAKER_' || (g % 3), 'We went through the numbers for the quarter and agreed on the next steps, part ' || g, g * 5000, g * 5000 + 4800
     FROM generate_series(0, $2::int - 1) g`,
    [transcriptionId, Math.floor(secondsPerMeeting / 5)],
  );
  const take = { meetingId, audioVersion: 1 };
  const frames = SEGMENT_SECONDS * FRAMES_PER_SECOND;
  const writes: Promise<void>[] = [];
  for (let s = 0; s < segmentsPerMeeting; s++) {
    const start = s * frames;
    const end = start + frames - 1;
    writes.push(
      (async () => {
        const name = segmentObjectName(take, start, end);
        const stored = await store.write(name, pcm);
        await db.query(
          'bench.manifest',
          `INSERT INTO segment_manifest (meeting_id, audio_version, start_sequence, end_sequence, started_at_ms, duration_ms, object_name, object_generation, byte_count, crc32c)
           VALUES ($1, 1, $2, $3, $4, $5, $6, $7, $8, $9)`,
          [
            meetingId,
            start,
            end,
            start * 100,
            frames * 100,
            name,
            Number(stored.generation),
            pcm.length,
            stored.crc32c,
          ],
        );
      })(),
    );
    if (writes.length >= 16) await Promise.all(writes.splice(0));
  }
  await Promise.all(writes);
  audioBytes += segmentsPerMeeting * segmentBytes;
}
const { rows: pending } = await db.query<{ id: string }>(
  'bench.export',
  'INSERT INTO account_export (user_id) VALUES ($1) RETURNING id',
  [userId],
);
const seedS = (performance.now() - t0) / 1000;
console.log(`seeded ${MEETINGS} meetings, ${(audioBytes / 1e9).toFixed(2)} GB of audio in ${seedS.toFixed(0)} s`);

// The exporter, in its own process.
const child = spawn(process.execPath, ['--import', 'tsx', path.join(import.meta.dirname, 'export-worker.ts')], {
  env: {
    ...process.env,
    BENCH_DATABASE_URL: database.url,
    BENCH_BUCKET: bucket,
    BENCH_GCS_URL: gcs.url,
    BENCH_SIGNER_KEY_FILE: signerKeyFile,
  },
  stdio: ['ignore', 'pipe', 'inherit'],
});
let out = '';
child.stdout.on('data', (c: Buffer) => {
  out += c.toString();
});
const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
if (code !== 0) throw new Error(`the exporter exited with ${code}`);
const result = JSON.parse(out.trim().split('\n').pop()!) as {
  outcome: string;
  idleRss: number;
  peakRss: number;
  wallMs: number;
  cpuMs: number;
  peakHeap: number;
  peakBuffers: number;
};
const row = await getExport(db, userId, pending[0].id);
if (result.outcome !== 'ready' || row?.status !== 'ready') throw new Error(`export ended ${result.outcome}`);
const archive = await store.stat(row.storage_path!);
const archiveBytes = archive!.size;

const MiB = 2 ** 20;
const gb = archiveBytes / 1e9;
const seconds = result.wallMs / 1000;
const mbPerS = archiveBytes / 1e6 / seconds;
const overIdle = (result.peakRss - result.idleRss) / MiB;
const cpuPerGb = result.cpuMs / 1000 / gb;
const segmentObjects = MEETINGS * segmentsPerMeeting;
const uploadRequests = Math.ceil(archiveBytes / (8 * MiB)) + 1;
const cost = {
  cpu: seconds * PRICE.vcpuSecond + seconds * FUNCTION_MEMORY_GIB * PRICE.gibSecond,
  reads: (segmentObjects / 1000) * PRICE.classBPer1000,
  writes: (uploadRequests / 1000) * PRICE.classAPer1000,
  storage: gb * PRICE.gbMonth * (72 / 730),
  egress: gb * PRICE.egressPerGb,
};
const usd = (v: number) => `$${v.toFixed(v < 0.01 ? 5 : 3)}`;
const total = Object.values(cost).reduce((a, b) => a + b, 0);
const rows = [
  {
    measure: 'archive',
    result: `${(archiveBytes / 1e6).toFixed(0)} MB (${MEETINGS} meetings, ${AUDIO_HOURS} h of PCM audio, ${segmentObjects} segment objects)`,
  },
  { measure: 'archive time', result: `${seconds.toFixed(1)} s` },
  { measure: 'throughput', result: `${mbPerS.toFixed(1)} MB/s` },
  {
    measure: 'exporter RSS at rest / peak',
    result: `${(result.idleRss / MiB).toFixed(0)} / ${(result.peakRss / MiB).toFixed(0)} MiB (peak +${overIdle.toFixed(0)} MiB over rest; target ≤ 64)`,
  },
  {
    measure: 'of which (sampled peaks): V8 heap used / Buffers',
    result: `${(result.peakHeap / MiB).toFixed(0)} / ${(result.peakBuffers / MiB).toFixed(0)} MiB`,
  },
  { measure: 'CPU per GB of archive', result: `${cpuPerGb.toFixed(1)} CPU-s` },
  { measure: 'function CPU and memory (1 vCPU, 512 MiB, for the archive time)', result: usd(cost.cpu) },
  {
    measure: `storage reads (${segmentObjects} GETs) and writes (${uploadRequests} upload requests)`,
    result: usd(cost.reads + cost.writes),
  },
  { measure: 'the archive kept 72 h', result: usd(cost.storage) },
  { measure: 'internet egress of one download', result: usd(cost.egress) },
  { measure: 'one export, in all', result: `${usd(total)} (${usd(total - cost.egress)} without the download)` },
];
const body = [
  `An account of ${MEETINGS} meetings and ${AUDIO_HOURS} h of live PCM audio (16 kHz, stored as ${SEGMENT_SECONDS} s segment objects), each meeting with a transcript (a segment per 5 s); the GCS emulator on the same machine (objects on disk) and ${engine.engine.label}. Seeded in ${seedS.toFixed(0)} s. The exporter (the sweep's builder, lib/use-cases/account-exports.ts) runs in a process of its own; its peak is VmHWM, reset at the start of the build. Prices: Cloud Run functions request-billed CPU $0.000024/vCPU-s and $0.0000025/GiB-s, Cloud Storage Standard class A $0.005/1,000, class B $0.0004/1,000, $0.02/GB-month, internet egress $0.12/GB (list, us-central1).`,
  '',
  table(rows),
  '',
  `export: ${mbPerS.toFixed(1)} MB/s, peak RSS +${overIdle.toFixed(0)} MiB`,
].join('\n');
console.log(body);
writeSection('Account export', body);
await db.close();
await database.close();
await gcs.stop();
await engine.stop();
rmSync(work, { recursive: true, force: true });
