// The long no-loss run: `npm run test:fault -- --faults 100 [--clients 4] [--seed n] [--fps 30]`
// (or FAULTS=100). Starts its own emulators (Firestore unless FIRESTORE_EMULATOR_HOST is set),
// prints the figures for RELIABILITY.md and exits 1 when anything acknowledged was lost,
// duplicated, or left stray objects, or the account export killed mid-archive did not end ready
// with a valid archive within its bound (export-kill.ts).
import { parseArgs } from 'node:util';
import { runNoLoss } from './scenario';

const { values } = parseArgs({
  options: {
    faults: { type: 'string', default: process.env.FAULTS ?? '100' },
    clients: { type: 'string', default: process.env.FAULT_CLIENTS ?? '4' },
    seed: { type: 'string', default: process.env.FAULT_SEED ?? String(Date.now() % 1_000_000) },
    fps: { type: 'string', default: '30' },
  },
});

const t0 = Date.now();
const log = (line: string) => console.error(`[${((Date.now() - t0) / 1000).toFixed(1)}s] ${line}`);
const report = await runNoLoss({
  faults: Number(values.faults),
  clients: Number(values.clients),
  seed: Number(values.seed),
  framesPerSecond: Number(values.fps),
  cluster: { firestoreHost: process.env.FIRESTORE_EMULATOR_HOST },
  exportKill: true,
  log,
});

const t = report.totals;
const figures = {
  seed: Number(values.seed),
  duration_s: Math.round(report.durationMs / 1000),
  faults_injected: report.faultsInjected,
  faults_by_kind: report.faults,
  takes: t.takes,
  frames_sent: t.sent,
  frames_acked: t.acked,
  frames_stored: t.stored,
  lost: t.lost,
  duplicated: t.duplicated,
  unrecovered: t.unrecovered,
  stray_objects: report.strays.length,
  not_finalized: t.notFinalized,
  composed_mismatch: t.composedBad,
  reconnects: report.clients.reconnects,
  resumes: report.clients.resumes,
  frames_resent: report.clients.resent,
  gap_frames_uploaded: report.clients.gapFramesUploaded,
  takes_stopped_by_server: report.clients.takesStoppedByServer,
  webhook_events: report.webhooks.events,
  webhook_delivered: report.webhooks.delivered,
  webhook_redelivered: report.webhooks.redelivered,
  webhook_missing: report.webhooks.missing.length,
  webhook_unverified: report.webhooks.unverified,
  export_kill: report.exportKill,
};
console.log(JSON.stringify(figures, null, 2));
if (report.clients.anomalies.length) console.error(`client anomalies:\n  ${report.clients.anomalies.join('\n  ')}`);
for (const take of report.takes)
  if (take.lost.length)
    console.error(`${take.name} (${take.meetingId}) lost ${take.lost.length}: ${take.lost.slice(0, 20).join(', ')}`);
if (report.exportKill?.problems.length) console.error(`export kill:\n  ${report.exportKill.problems.join('\n  ')}`);
if (report.strays.length) console.error(`stray objects:\n  ${report.strays.join('\n  ')}`);
const failed =
  t.lost +
    t.duplicated +
    report.strays.length +
    t.composedBad +
    report.webhooks.missing.length +
    report.webhooks.unverified +
    (report.exportKill?.problems.length ?? 1) >
  0;
process.exit(failed ? 1 : 0);
