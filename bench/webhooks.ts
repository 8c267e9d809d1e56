// `npm run bench:webhooks`: webhook delivery on the test engine (native PostgreSQL when installed).
//  1. Deliveries per CPU-second of the dispatcher's process: BENCH_WEBHOOK_EVENTS events of
//     BENCH_WEBHOOK_ENDPOINTS users, each with one endpoint on a local receiver (a child process,
//     so its CPU is not counted), fanned out, signed, sent and logged. Baseline in the same run:
//     the same number of bare unsigned POSTs to the same receiver, one connection each, 64 at once
//     (what any sender pays for HTTP alone).
//  2. The added cost per event for a user without webhooks: the time of writing that user's events
//     (one appendEvents transaction each) while dispatchers poll for the other users' endpoints,
//     against no dispatcher and no endpoint at all, in alternating rounds.
//  3. Fairness (decisions.md section 8): a healthy endpoint's delivery latency (the event's commit
//     to its arrival at the receiver) while BENCH_WEBHOOK_HANGING endpoints of 5 other users hang
//     (a server that accepts and never answers; the attempt timeout is the real 10 s), their
//     users writing events all along; one dispatcher with the production poll (1 s) and slots.
//     Baseline in the same run: the same with no endpoint hanging.
import { fork } from 'node:child_process';
import http from 'node:http';
import { createDatabase } from '@mi/lib/db/pool';
import { changed } from '@mi/lib/events/catalogue';
import { appendEvents } from '@mi/lib/events/outbox';
import { createLogger } from '@mi/lib/telemetry/log';
import { newSecret } from '@mi/lib/use-cases/webhooks';
import { startDispatcher } from '@mi/lib/webhooks/dispatcher';
import { createTestDatabase, startTestEngine } from '../test/support/database';
import { ms, percentile, table, writeSection, type Row } from './report';

const EVENTS = Number(process.env.BENCH_WEBHOOK_EVENTS ?? 5_000);
const ENDPOINTS = Number(process.env.BENCH_WEBHOOK_ENDPOINTS ?? 50);
const WRITES = Number(process.env.BENCH_WEBHOOK_WRITES ?? 400);
const HANGING = Number(process.env.BENCH_WEBHOOK_HANGING ?? 100);
const HANGING_USERS = 5;
const HEALTHY_EVENTS = Number(process.env.BENCH_WEBHOOK_HEALTHY_EVENTS ?? 300);
const ROUNDS = 6;

const engine = await startTestEngine();
const database = await createTestDatabase(engine.engine);
const db = createDatabase(database.url, { max: 8 });
const log = createLogger({ level: 'warn', name: 'bench' });

// The receiver: a child process answering 204 to everything and counting.
const receiver = fork(new URL('./webhook-receiver.ts', import.meta.url).pathname, [], {
  execArgv: ['--import', 'tsx'],
});
const port = await new Promise<number>((resolve) => receiver.once('message', (m: { port: number }) => resolve(m.port)));
const url = `http://127.0.0.1:${port}/hook`;
const received = () =>
  new Promise<number>((resolve) => {
    receiver.once('message', (m: { count: number }) => resolve(m.count));
    receiver.send('count');
  });

const { rows: users } = await db.query<{ id: string }>(
  'bench.users',
  `INSERT INTO app_user (username, email) SELECT 'u' || g, 'u' || g || '@bench.invalid' FROM generate_series(1, $1) g RETURNING id`,
  [ENDPOINTS + 1],
);
const quiet = users.pop()!.id; // the user without webhooks
const perUser = Math.ceil(EVENTS / ENDPOINTS);
for (const u of users)
  await appendEvents(
    db,
    u.id,
    Array.from({ length: perUser }, () => changed('tag', 'created', null, null)),
  );
await db.query(
  'bench.webhooks',
  `INSERT INTO webhook (user_id, url, event_types, secret) SELECT u, $2, ARRAY['*'], $3 FROM unnest($1::uuid[]) AS u`,
  [users.map((u) => u.id), url, newSecret()],
);
const total = perUser * users.length;

// 1. Deliveries per CPU-second.
const base = await received();
const cpu0 = process.cpuUsage();
const t0 = performance.now();
const dispatcher = startDispatcher({ db, log, env: 'test', pollMs: 20, retrySchedule: [1], disableAfterSeconds: 3600 });
while ((await received()) - base < total) await new Promise((r) => setTimeout(r, 50));
await dispatcher.stop();
const wallMs = performance.now() - t0;
const cpu = process.cpuUsage(cpu0);
const dispatchCpuS = (cpu.user + cpu.system) / 1e6;
const { rows: logged } = await db.query<{ n: number }>(
  'bench.logged',
  'SELECT count(*)::int AS n FROM webhook_attempt WHERE status_code = 204',
);

const bareCpu0 = process.cpuUsage();
let next = 0;
const post = () =>
  new Promise<void>((resolve, reject) => {
    const req = http.request(
      url,
      { method: 'POST', agent: false, headers: { 'content-type': 'application/json' } },
      (res) => {
        res.resume();
        res.on('end', resolve);
      },
    );
    req.on('error', reject);
    req.end('{"type":"EntityChanged"}');
  });
await Promise.all(
  Array.from({ length: 64 }, async () => {
    while (next++ < total) await post();
  }),
);
const bare = process.cpuUsage(bareCpu0);
const bareCpuS = (bare.user + bare.system) / 1e6;

// 2. Writing events of the user without webhooks: with dispatchers polling, and with none.
const writeRound = async () => {
  const times: number[] = [];
  for (let i = 0; i < WRITES; i++) {
    const t = performance.now();
    await db.withTransaction((tx) => appendEvents(tx, quiet, [changed('tag', 'created', null, null)]));
    times.push(performance.now() - t);
  }
  return percentile(times, 50);
};
const withHooks: number[] = [];
const without: number[] = [];
for (let r = 0; r < ROUNDS; r++) {
  await db.query('bench.disable', 'UPDATE webhook SET enabled = false');
  without.push(await writeRound());
  await db.query('bench.enable', 'UPDATE webhook SET enabled = true');
  const polling = [1, 2].map(() =>
    startDispatcher({ db, log, env: 'test', pollMs: 1000, retrySchedule: [1], disableAfterSeconds: 3600 }),
  );
  withHooks.push(await writeRound());
  await Promise.all(polling.map((d) => d.stop()));
}
// 3. A healthy endpoint's latency while other users' endpoints hang.
await db.query('bench.clear', 'DELETE FROM webhook');
const open = new Set<http.ServerResponse>();
const hangServer = http.createServer((req, res) => {
  req.resume();
  open.add(res);
  res.on('close', () => open.delete(res));
});
const arrived = new Map<string, number>();
const healthyServer = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    arrived.set(String(req.headers['webhook-id']), performance.now());
    res.writeHead(204).end();
  });
});
const listen = async (server: http.Server) => {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as import('node:net').AddressInfo).port}/hook`;
};
const hangUrl = await listen(hangServer);
const healthyUrl = await listen(healthyServer);
const { rows: fairUsers } = await db.query<{ id: string }>(
  'bench.fair_users',
  `INSERT INTO app_user (username, email) SELECT 'f' || g, 'f' || g || '@bench.invalid' FROM generate_series(1, $1) g RETURNING id`,
  [HANGING_USERS + 1],
);
const healthyUser = fairUsers.pop()!.id;
await db.query(
  'bench.healthy_webhook',
  `INSERT INTO webhook (user_id, url, event_types, secret, cursor_seq)
   VALUES ($1, $2, ARRAY['*'], $3, (SELECT COALESCE(max(seq), 0) FROM event_outbox WHERE user_id = $1))`,
  [healthyUser, healthyUrl, newSecret()],
);
const write = (userId: string) =>
  db.withTransaction((tx) => appendEvents(tx, userId, [changed('tag', 'created', null, null)]));
const latencies = async (hanging: number) => {
  if (hanging)
    await db.query(
      'bench.hanging_webhooks',
      `INSERT INTO webhook (user_id, url, event_types, secret)
       SELECT u, $2, ARRAY['*'], $3 FROM unnest($1::uuid[]) AS u, generate_series(1, $4)`,
      [fairUsers.map((u) => u.id), hangUrl, newSecret(), hanging / HANGING_USERS],
    );
  const d = startDispatcher({ db, log, env: 'test', pollMs: 1000, retrySchedule: [5, 300], disableAfterSeconds: 3600 });
  // The other users write all along, so their endpoints always have a delivery due.
  let writing = hanging > 0;
  const noise = (async () => {
    while (writing) {
      for (const u of fairUsers) await write(u.id);
      await new Promise((r) => setTimeout(r, 500));
    }
  })();
  if (hanging) while (open.size < Math.min(hanging, HANGING_USERS * 8)) await new Promise((r) => setTimeout(r, 50));
  const written = new Map<string, number>();
  for (let i = 0; i < HEALTHY_EVENTS; i++) {
    const [e] = await write(healthyUser);
    written.set(e.event_id, performance.now());
    await new Promise((r) => setTimeout(r, 100));
  }
  while ([...written.keys()].some((id) => !arrived.has(id))) await new Promise((r) => setTimeout(r, 50));
  const maxOpen = open.size;
  writing = false;
  await noise;
  for (const res of open) res.destroy(); // the hanging attempts end, so the dispatcher can stop
  await d.stop();
  await db.query('bench.unhang', 'DELETE FROM webhook WHERE url = $1', [hangUrl]);
  return { times: [...written].map(([id, t]) => arrived.get(id)! - t), maxOpen };
};
const calm = await latencies(0);
const busy = await latencies(HANGING);
hangServer.close();
healthyServer.close();

const us = (v: number) => `${(v * 1000).toFixed(0)} µs`;
const med = (v: number[]) => percentile(v, 50);

const rows: Row[] = [
  {
    measure: `deliveries per CPU-second of the dispatcher process (${total.toLocaleString('en')} events, ${users.length} endpoints; signed, sent, logged)`,
    result: `${Math.round(total / dispatchCpuS).toLocaleString('en')} /s (${dispatchCpuS.toFixed(1)} s CPU, ${(wallMs / 1000).toFixed(1)} s wall, ${logged[0].n.toLocaleString('en')} logged)`,
    baseline: `bare POSTs, same receiver: ${Math.round(total / bareCpuS).toLocaleString('en')} /s (${bareCpuS.toFixed(1)} s CPU)`,
    ratio: (dispatchCpuS / bareCpuS).toFixed(2),
  },
  {
    measure: `writing an event of a user without webhooks (median of ${ROUNDS} rounds of ${WRITES} one-event transactions), while 2 dispatchers poll for ${users.length} endpoints`,
    result: us(med(withHooks)),
    baseline: `no dispatcher, no enabled endpoint: ${us(med(without))}`,
    ratio: (med(withHooks) / med(without)).toFixed(2),
  },
  {
    measure: `a healthy endpoint's delivery latency, p50 / p99 (${HEALTHY_EVENTS} events, one per 100 ms), while ${HANGING} endpoints of ${HANGING_USERS} other users never answer (1 dispatcher, 1 s poll, ${busy.maxOpen} of their attempts in flight at the end); target p99 ≤ 2 s`,
    result: `${ms(percentile(busy.times, 50))} / ${ms(percentile(busy.times, 99))}`,
    baseline: `no endpoint hanging: ${ms(percentile(calm.times, 50))} / ${ms(percentile(calm.times, 99))}`,
    ratio: (percentile(busy.times, 99) / percentile(calm.times, 99)).toFixed(2),
  },
];
const out =
  `Engine: ${engine.engine.label}. Dispatcher CPU: its own process's (not Postgres's nor the receiver's). ` +
  `Method: bench/webhooks.ts.\n\n${table(rows)}`;
console.log(out);
writeSection('Webhooks', out);
receiver.kill();
await db.close();
await database.close();
await engine.stop();
