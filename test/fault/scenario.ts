// The no-loss scenario shared by the quick test (no-loss.test.ts) and the long run (run.ts):
// clients record through two live instances while a controller injects faults; then
// everything heals, the clients stop and upload their gaps, the sweep finalizes, and the
// checker compares what was acknowledged with what is stored.
import { randomUUID } from 'node:crypto';
import { NO_COUNTS, runSweep, type SweepCounts } from '../../functions/sweep';
import { checkMeeting, totals, type NoLossTotals, type TakeReport } from './checker';
import { ResilientClient } from './client';
import { startCluster, type Cluster, type ClusterOptions, type LiveChild } from './cluster';
import { killExporterMidArchive, type ExportKillReport } from './export-kill';
import { sleep } from '../support/poll';
import { Receiver } from '../webhooks/receiver';

export const FAULT_KINDS = [
  'sigkill',
  'sigterm',
  'drop-socket',
  'client-offline',
  'gcs-503',
  'gcs-stall',
  'ml-hang',
  'ml-refuse',
  'pubsub-restart',
  'db-restart',
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

export interface NoLossOptions {
  /** How many faults to inject (ignored when `sequence` is given). */
  faults?: number;
  /** Concurrent recordings (one user and one client each). Default 3. */
  clients?: number;
  seed?: number;
  /** Frames per second each client records (real time is 10). Default 30. */
  framesPerSecond?: number;
  /** Pause between faults, ms. Default [1500, 3500]. */
  pauseMs?: [number, number];
  kinds?: readonly FaultKind[];
  /** Inject exactly these faults in this order (instead of `faults` drawn from shuffled decks of `kinds`). */
  sequence?: readonly FaultKind[];
  cluster?: ClusterOptions;
  /** After the recordings, kill an account export's builder mid-archive (export-kill.ts). */
  exportKill?: boolean;
  log?: (line: string) => void;
}

export interface NoLossReport {
  totals: NoLossTotals;
  takes: TakeReport[];
  faults: Partial<Record<FaultKind, number>>;
  faultsInjected: number;
  faultLog: string[];
  /** Objects under a meeting's prefix that nothing references, and leftovers of the compose temp prefix. */
  strays: string[];
  clients: {
    reconnects: number;
    resumes: number;
    resent: number;
    gapFramesUploaded: number;
    takesStoppedByServer: number;
    anomalies: string[];
  };
  /** What the users' webhook (one each, every event type, delivered by the live instances) received. */
  webhooks: WebhookReport;
  /** What the sweeps did, summed over the run. */
  sweeps: SweepCounts;
  /** The exporter kill, when asked for. */
  exportKill?: ExportKillReport;
  durationMs: number;
}

/** Unique bytes per client, take and sequence: 100 ms of 16 kHz 16-bit mono (3,200 bytes). */
export function frameBytesFor(client: number): (audioVersion: number, seq: number) => Buffer {
  return (audioVersion, seq) => {
    const b = Buffer.alloc(3200);
    for (let i = 0; i < b.length; i += 8) {
      b.writeUInt32LE(seq, i);
      b.writeUInt32LE(((client + 1) * 0x9e3779b1 + audioVersion * 0x85ebca6b + i * 2654435761) >>> 0, i + 4);
    }
    return b;
  };
}

export async function runNoLoss(opts: NoLossOptions): Promise<NoLossReport> {
  const log = opts.log ?? (() => {});
  const started = Date.now();
  const cluster = await startCluster({ log, ...opts.cluster });
  log(`cluster up in ${Date.now() - started} ms`);
  try {
    const report = await drive(cluster, opts, log, started);
    // The first user's account holds a take recorded through the faults: its export is built and killed.
    if (opts.exportKill) report.exportKill = await killExporterMidArchive(cluster, 'fault-user-0', log);
    return report;
  } finally {
    await cluster.close();
  }
}

async function drive(
  cluster: Cluster,
  opts: NoLossOptions,
  log: (line: string) => void,
  started: number,
): Promise<NoLossReport> {
  const random = mulberry32(opts.seed ?? 1);
  const nClients = opts.clients ?? 3;
  const fps = opts.framesPerSecond ?? 30;
  const [pauseMin, pauseMax] = opts.pauseMs ?? [1500, 3500];
  const instanceUrls = () => cluster.instances.map((i) => i.wsUrl);

  // Each user's webhook posts to its own path; the receiver checks it with that webhook's secret.
  const secrets = new Map<string, string>();
  const receiver = await new Receiver((path) => secrets.get(path) ?? '').start();
  const webhookUsers: string[] = [];
  const clients = await Promise.all(
    Array.from({ length: nClients }, async (_, i) => {
      const token = await cluster.token(`fault-user-${i}`);
      webhookUsers.push(await subscribe(cluster.apiUrl, token, `${receiver.url}/${i}`, secrets));
      const meetingId = await createMeeting(cluster.apiUrl, token);
      const client = new ResilientClient({
        name: `client-${i}`,
        token,
        apiUrl: cluster.apiUrl,
        meetingId,
        instances: instanceUrls,
        frameBytes: frameBytesFor(i),
        log,
      });
      await client.begin();
      return client;
    }),
  );
  log('recording');

  // Frames flow in 100 ms ticks for the whole fault phase.
  let carry = 0;
  const producer = setInterval(() => {
    carry += fps / 10;
    const n = Math.floor(carry);
    carry -= n;
    for (const c of clients) c.produce(n);
  }, 100);

  // The sweep runs all along, as in the local stack: it stops takes whose owner died mid-stop
  // (or that nobody resumed), finalizes stopped ones and republishes the outbox.
  const sweeper = startSweeper(cluster, log);
  const faults = new FaultInjector(cluster, clients, random, log);
  // PGlite runs inside the API's process and cannot restart under its clients.
  const kinds = (opts.kinds ?? FAULT_KINDS).filter((k) => k !== 'db-restart' || cluster.restartDatabase);
  if (!cluster.restartDatabase) log(`db-restart faults left out: ${cluster.databaseEngine}`);
  let deck: FaultKind[] = [];
  try {
    const count = opts.sequence?.length ?? opts.faults ?? 0;
    for (let i = 0; i < count; i++) {
      await sleep(pauseMin + random() * (pauseMax - pauseMin));
      if (!deck.length) deck = shuffled([...kinds], random);
      await faults.inject(opts.sequence?.[i] ?? deck.pop()!);
    }
    await sleep(pauseMin);
  } finally {
    clearInterval(producer);
  }

  await faults.heal();
  log(`healed after ${faults.injected} faults; clients finishing`);
  // Give the last frames a chance to be acknowledged over the WebSocket before the stop.
  for (const deadline = Date.now() + 15_000; Date.now() < deadline && clients.some((c) => c.unacked.size > 0); )
    await sleep(200);
  log(
    `unacked before the stop: ${clients.map((c) => `${c.o.name} ${c.unacked.size} (acked through ${c.ackedThrough} of ${c.nextSeq})`).join(', ')}`,
  );
  await Promise.all(clients.map((c) => c.finish()));
  log('stopped and gaps uploaded');
  const sweeps = [...(await sweeper.stop()), await sweep(cluster)];
  const open = await stillStopped(cluster, clients);
  if (open.length) {
    // Takes the server stopped wait for their gap deadline (their client may still hold frames),
    // as do takes with ranges nobody could upload: let the deadline pass so they are finalized and checked.
    log(`takes still stopped after the gap uploads: ${open.join(', ')}`);
    await cluster.rt.db.query(
      'fault.expire',
      `UPDATE recording SET gap_upload_deadline = now() - interval '1 second' WHERE meeting_id = ANY($1::uuid[]) AND state = 'stopped'`,
      [open],
    );
    sweeps.push(await sweep(cluster));
  }

  log(`swept: ${JSON.stringify(sumSweeps(sweeps))}`);
  const checked = await Promise.all(
    clients.map((c, i) =>
      checkMeeting(cluster.rt, {
        name: c.o.name,
        meetingId: c.o.meetingId,
        takes: c.takes(),
        frameBytes: frameBytesFor(i),
      }),
    ),
  );
  const takes = checked.flatMap((c) => c.takes);
  const strays = [...checked.flatMap((c) => c.strays), ...(await cluster.rt.store.list('_tmp/')).map((o) => o.name)];
  log('checked');
  const webhooks = await checkWebhooks(cluster, receiver, webhookUsers, log);
  await receiver.stop();
  for (const c of clients) c.close();
  const sum = (f: (c: ResilientClient) => number) => clients.reduce((n, c) => n + f(c), 0);
  return {
    totals: totals(takes),
    takes,
    faults: faults.counts,
    faultsInjected: faults.injected,
    faultLog: faults.history,
    strays,
    clients: {
      reconnects: sum((c) => c.stats.reconnects),
      resumes: sum((c) => c.stats.resumes),
      resent: sum((c) => c.stats.resent),
      gapFramesUploaded: sum((c) => c.stats.gapFramesUploaded),
      takesStoppedByServer: sum((c) => c.stats.takesStoppedByServer),
      anomalies: clients.flatMap((c) => c.stats.anomalies.map((a) => `${c.o.name}: ${a}`)),
    },
    webhooks,
    sweeps: sumSweeps(sweeps),
    durationMs: Date.now() - started,
  };
}

/** Injects one fault at a time; instance restarts and timed heals run in the background. */
class FaultInjector {
  readonly counts: Partial<Record<FaultKind, number>> = {};
  readonly history: string[] = [];
  injected = 0;
  private readonly background = new Set<Promise<unknown>>();
  private pubsubRestart: Promise<void> | null = null;
  private dbRestart: Promise<void> | null = null;

  constructor(
    private readonly cluster: Cluster,
    private readonly clients: ResilientClient[],
    private readonly random: () => number,
    private readonly log: (line: string) => void,
  ) {}

  private get graceSeconds(): number {
    return this.cluster.config.RECORDING_DISCONNECT_GRACE_SECONDS;
  }

  async inject(kind: FaultKind): Promise<void> {
    const c = this.cluster;
    const between = (lo: number, hi: number) => Math.round(lo + this.random() * (hi - lo));
    let detail = '';
    switch (kind) {
      case 'sigkill':
      case 'sigterm': {
        // Never both instances down: the clients must have somewhere to go.
        await this.settleRestarts();
        const victim = this.holderOfSomeRecording();
        const t0 = Date.now();
        const how = await victim.kill(kind === 'sigkill' ? 'SIGKILL' : 'SIGTERM');
        detail = `${victim.name} exited (${how}) after ${Date.now() - t0} ms`;
        this.later(
          sleep(between(300, 2000)).then(async () => {
            const t1 = Date.now();
            await victim.start();
            this.log(`${victim.name} restarted in ${Date.now() - t1} ms`);
          }),
        );
        break;
      }
      case 'drop-socket': {
        const client = this.clients[between(0, this.clients.length - 1)];
        detail = `${client.o.name} on ${client.url ?? 'nothing'}`;
        client.dropSocket();
        break;
      }
      case 'client-offline': {
        // Away longer than the disconnect grace: the server stops the take; the client uploads its gaps and starts a new one.
        const client = this.clients[between(0, this.clients.length - 1)];
        const ms = Math.round(this.graceSeconds * 1000 + between(1500, 3000));
        detail = `${client.o.name} for ${ms} ms`;
        client.goOffline(ms);
        break;
      }
      case 'gcs-503': {
        const count = between(3, 15);
        await c.gcsFault({ mode: 'error503', count });
        detail = `next ${count} storage requests answer 503`;
        break;
      }
      case 'gcs-stall': {
        const count = between(2, 6);
        const ms = between(2000, 5000);
        await c.gcsFault({ mode: 'stall', count, stall_ms: ms });
        detail = `next ${count} storage requests stall ${ms} ms`;
        break;
      }
      case 'ml-hang':
      case 'ml-refuse': {
        const ms = between(2000, 5000);
        c.ml.setMode(kind === 'ml-hang' ? 'hang' : 'refuse');
        this.later(sleep(ms).then(() => c.ml.setMode('normal')));
        detail = `for ${ms} ms`;
        break;
      }
      case 'db-restart': {
        // The database goes away under every part at once (Cloud SQL maintenance, a failover).
        if (!c.restartDatabase) throw new Error(`db-restart needs the native engine, not ${c.databaseEngine}`);
        if (this.dbRestart) await this.dbRestart;
        const ms = between(1000, 4000);
        this.dbRestart = c.restartDatabase(ms).finally(() => (this.dbRestart = null));
        this.later(this.dbRestart);
        detail = `down for ${ms} ms`;
        break;
      }
      case 'pubsub-restart':
        if (this.pubsubRestart) await this.pubsubRestart;
        this.pubsubRestart = c.pubsub.restart!().finally(() => (this.pubsubRestart = null));
        this.later(this.pubsubRestart);
        detail = 'stopped and started again';
        break;
    }
    this.counts[kind] = (this.counts[kind] ?? 0) + 1;
    this.injected++;
    const line = `fault ${this.injected}: ${kind} ${detail}`;
    this.history.push(line);
    this.log(line);
  }

  /** Ends every fault: restarts done, instances up, storage answering, ML normal. */
  async heal(): Promise<void> {
    await this.settleRestarts();
    await this.cluster.clearGcsFaults();
    this.cluster.ml.setMode('normal');
    await Promise.all(this.cluster.instances.map((i) => i.start()));
  }

  private async settleRestarts(): Promise<void> {
    while (this.background.size) await Promise.allSettled([...this.background]);
  }

  private later(p: Promise<unknown>): void {
    const tracked = p
      .catch((err) => this.log(`background heal failed: ${(err as Error).message}`))
      .finally(() => this.background.delete(tracked));
    this.background.add(tracked);
  }

  /** The instance a connected client (and so its recording) is on; any running one otherwise. */
  private holderOfSomeRecording(): LiveChild {
    const running = this.cluster.instances.filter((i) => i.running);
    const on = this.clients.map((c) => running.find((i) => i.wsUrl === c.url)).filter((i): i is LiveChild => !!i);
    const pool = on.length ? on : running;
    return pool[Math.floor(this.random() * pool.length)];
  }
}

/** The sweep runs this often during the run, as in the local stack. */
const SWEEP_INTERVAL_MS = 5_000;

const sweep = (cluster: Cluster) => runSweep(cluster.rt, { coordination: cluster.rt.coordination });

function startSweeper(cluster: Cluster, log: (line: string) => void): { stop(): Promise<SweepCounts[]> } {
  const passes: SweepCounts[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      await sleep(SWEEP_INTERVAL_MS);
      if (!running) break;
      passes.push(await sweep(cluster).catch((err) => (log(`sweep failed: ${(err as Error).message}`), NO_COUNTS)));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return passes;
    },
  };
}

function sumSweeps(passes: SweepCounts[]): SweepCounts {
  const total = { ...NO_COUNTS };
  for (const p of passes) for (const k of Object.keys(total) as (keyof SweepCounts)[]) total[k] += p[k];
  return total;
}

async function createMeeting(apiUrl: string, token: string): Promise<string> {
  const res = await fetch(`${apiUrl}/meetings`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'idempotency-key': randomUUID() },
    body: JSON.stringify({ title: 'fault run', source_type: 'recording' }),
  });
  if (res.status !== 201) throw new Error(`POST /meetings answered ${res.status}: ${await res.text()}`);
  return ((await res.json()) as { id: string }).id;
}

async function stillStopped(cluster: Cluster, clients: ResilientClient[]): Promise<string[]> {
  const { rows } = await cluster.rt.db.query<{ meeting_id: string }>(
    'fault.unfinalized',
    `SELECT meeting_id FROM recording WHERE meeting_id = ANY($1::uuid[]) AND state = 'stopped'`,
    [clients.map((c) => c.o.meetingId)],
  );
  return rows.map((r) => r.meeting_id);
}

/** A small seeded PRNG: the same seed injects the same faults in the same order. */
function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function shuffled<T>(items: T[], random: () => number): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [items[i], items[j]] = [items[j], items[i]];
  }
  return items;
}

export interface WebhookReport {
  /** Events of the users written after their webhook (every type but the progress event). */
  events: number;
  /** Distinct events received with a 2xx, and attempts received beyond one per event. */
  delivered: number;
  redelivered: number;
  /** Events never received (ids), and requests whose signature did not verify. */
  missing: string[];
  unverified: number;
}

/** One webhook per user to the receiver, every event type; returns the user id. */
async function subscribe(apiUrl: string, token: string, url: string, secrets: Map<string, string>): Promise<string> {
  const headers = {
    authorization: `Bearer ${token}`,
    'content-type': 'application/json',
    'idempotency-key': randomUUID(),
  };
  const res = await fetch(`${apiUrl}/webhooks`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ url, event_types: ['*'] }),
  });
  if (res.status !== 201) throw new Error(`creating the webhook answered ${res.status}: ${await res.text()}`);
  const hook = (await res.json()) as { id: string; secret: string };
  secrets.set(new URL(url).pathname, hook.secret);
  const me = await fetch(`${apiUrl}/me`, { headers: { authorization: `Bearer ${token}` } });
  return ((await me.json()) as { id: string }).id;
}

/** Waits (up to 90 s: retries may be pending) until every event of the users reached the receiver. */
async function checkWebhooks(
  cluster: Cluster,
  receiver: Receiver,
  userIds: string[],
  log: (line: string) => void,
): Promise<WebhookReport> {
  const { rows } = await cluster.rt.db.query<{ id: string }>(
    'fault.webhook_events',
    `SELECT e.id FROM event_outbox e JOIN webhook w ON w.user_id = e.user_id
     WHERE e.user_id = ANY($1::uuid[]) AND e.created_at > w.created_at AND e.event_type <> 'AudioStoredProgressEvent'`,
    [userIds],
  );
  const expected = rows.map((r) => r.id);
  const missing = () => {
    const got = new Set(receiver.ids());
    return expected.filter((id) => !got.has(id));
  };
  for (const deadline = Date.now() + 90_000; Date.now() < deadline && missing().length; ) await sleep(250);
  const ids = receiver.ids();
  const report = {
    events: expected.length,
    delivered: new Set(ids).size,
    redelivered: ids.length - new Set(ids).size,
    missing: missing(),
    unverified: receiver.received.filter((r) => !r.verified).length,
  };
  log(`webhooks: ${JSON.stringify({ ...report, missing: report.missing.length })}`);
  return report;
}
