// The exporter of `npm run bench:export`, in a process of its own so that its memory is its own:
// claims the one pending export and builds it (the sweep's code), reporting its RSS at rest and
// at its peak during the build (VmHWM, reset before the build), its CPU time and wall time.
import { readFileSync, writeFileSync } from 'node:fs';
import { createObjectStore } from '@mi/lib/adapters/storage';
import { createDatabase } from '@mi/lib/db/pool';
import { SERVICE } from '@mi/lib/domain/actor';
import { createLogger } from '@mi/lib/telemetry/log';
import { buildExport, claimNextExport, type ExportDeps } from '@mi/lib/use-cases/account-exports';
import { runUseCase } from '@mi/lib/use-cases/use-case';
import { runWorkflow } from '@mi/lib/use-cases/workflow';

const env = (name: string) => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is required`);
  return v;
};
const kib = (field: string) =>
  Number(/(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8').split(`${field}:`)[1])![1]) * 1024;

const db = createDatabase(env('BENCH_DATABASE_URL'), { max: 2 });
const store = createObjectStore({
  bucket: env('BENCH_BUCKET'),
  emulatorHost: env('BENCH_GCS_URL'),
  signerKeyFile: env('BENCH_SIGNER_KEY_FILE'),
});
const deps: ExportDeps = {
  db,
  store,
  log: createLogger({ level: 'warn', name: 'bench-export' }),
  // The three account_export events stay in the outbox (the sweep's republish sends them): no Pub/Sub here.
  events: { publish: async () => undefined },
  config: { ACCOUNT_EXPORT_LEASE_SECONDS: 120, ACCOUNT_EXPORT_RETENTION_HOURS: 72 },
};

// At rest: connections open, clients made, code loaded.
await db.query('bench.warm', 'SELECT 1', []);
await store.stat('warm-up');
await new Promise((r) => setTimeout(r, 1000));
const idleRss = kib('VmRSS');
writeFileSync('/proc/self/clear_refs', '5'); // resets VmHWM to the current RSS
// What the peak is made of: V8's heap and the Buffers outside it, sampled.
const parts = { heap: 0, buffers: 0 };
const sampler = setInterval(() => {
  const m = process.memoryUsage();
  parts.heap = Math.max(parts.heap, m.heapUsed);
  parts.buffers = Math.max(parts.buffers, m.arrayBuffers);
}, 25);
const cpu0 = process.cpuUsage();
const t0 = performance.now();
const e = await runUseCase(deps, SERVICE, claimNextExport, 120);
if (!e) throw new Error('no pending export');
const outcome = await runWorkflow(deps, SERVICE, buildExport, { e });
const wallMs = performance.now() - t0;
const cpu = process.cpuUsage(cpu0);
const peakRss = kib('VmHWM');
clearInterval(sampler);
await db.close();
process.stdout.write(
  `${JSON.stringify({ outcome, exportId: e.id, idleRss, peakRss, wallMs, cpuMs: (cpu.user + cpu.system) / 1000, peakHeap: parts.heap, peakBuffers: parts.buffers })}\n`,
);
