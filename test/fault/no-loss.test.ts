// The quick no-loss run of `npm test`: three recordings through two live instances (child
// processes) while every kind of fault is injected once (SIGKILL and SIGTERM of an instance
// holding a recording, a dropped client socket, a client away past the disconnect grace,
// storage 503s and stalls, the ML service hanging and refusing, a Pub/Sub emulator restart, and on
// native PostgreSQL a database restart). Acknowledged frames lost, frames stored twice and
// stray objects must all be 0, and every event reaches the users' webhooks. The long run: `npm run test:fault -- --faults 100`.
import { describe, expect, inject, it, onTestFailed } from 'vitest';
import { runNoLoss } from './scenario';

// The database restarts only where it is a server of its own (native PostgreSQL).
const dbRestart = inject('database').kind === 'native' ? (['db-restart'] as const) : [];
if (!dbRestart.length) console.log('no-loss quick run: no db-restart fault on PGlite (it runs inside the API process)');

describe('no acknowledged frame is lost', () => {
  it('should keep every acknowledged frame through one fault of every kind, with no duplicate and no stray object', async () => {
    const t0 = Date.now();
    const lines: string[] = [];
    onTestFailed(() => console.log(lines.join('\n')));
    const report = await runNoLoss({
      log: (line) => lines.push(`[${((Date.now() - t0) / 1000).toFixed(1)}s] ${line}`),
      // The kills far apart (an instance is back before the other one goes down), and the Pub/Sub
      // restart early: gRPC channels take a while to reconnect after it.
      sequence: [
        'client-offline',
        'pubsub-restart',
        'sigkill',
        'gcs-503',
        'ml-hang',
        'drop-socket',
        'sigterm',
        'gcs-stall',
        'ml-refuse',
        ...dbRestart,
      ],
      pauseMs: [1000, 2000],
      clients: 3,
      framesPerSecond: 30,
      seed: 20261122,
      cluster: { firestoreHost: inject('emulatorEnv').FIRESTORE_EMULATOR_HOST },
    });
    const { anomalies, ...clients } = report.clients;
    console.log(
      `no-loss quick run: ${JSON.stringify({ ...report.totals, faults: report.faultsInjected, ...clients, seconds: Math.round(report.durationMs / 1000) })}`,
    );
    lines.push(
      `anomalies: ${JSON.stringify(anomalies)}`,
      ...report.takes.map((t) => JSON.stringify({ ...t, lost: t.lost.length })),
    );

    expect(report.faultsInjected).toBe(9 + dbRestart.length);
    expect(report.clients.reconnects).toBeGreaterThanOrEqual(3); // the kills and the dropped socket reached clients
    expect(report.totals.acked).toBeGreaterThan(1000);
    expect(report.takes.flatMap((t) => t.lost.map((seq) => `${t.name}#${seq}`))).toEqual([]);
    expect(report.totals.duplicated).toBe(0);
    // Every event of the users reached their webhook (delivered by the instances being killed), signed.
    expect(report.webhooks.events).toBeGreaterThan(10);
    expect(report.webhooks.missing).toEqual([]);
    expect(report.webhooks.unverified).toBe(0);
    expect(report.strays).toEqual([]);
    // The client that was away had its take stopped, uploaded what the server lacked, and went on in a new take.
    expect(report.clients.takesStoppedByServer).toBeGreaterThanOrEqual(1);
    expect(report.clients.gapFramesUploaded).toBeGreaterThan(0);
    expect(report.takes.length).toBeGreaterThanOrEqual(4);
    // The clients recovered every frame they recorded, and each take was composed from them.
    expect(report.totals.unrecovered).toBe(0);
    expect(report.takes.map((t) => [t.state, t.composed, t.degraded])).toEqual(
      report.takes.map(() => ['finalized', 'ok', false]),
    );
  }, 240_000);
});
