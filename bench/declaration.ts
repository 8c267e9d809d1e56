// `npm run bench:declaration`: what declaring a unit of work's user costs the client (issue 38),
// apart from the API's other work and the shared machine's noise. One process, a pool of 4, a
// user's page of 50 meetings read 4,000 times per row and round: this process's CPU per query
// (process.cpuUsage), for the same read undeclared (the floor), declared in the statement's own
// round trip (lib/db/pool.ts's DeclaredQuery, as the API reads) and declared by a transaction
// (BEGIN with the declaration, the read, COMMIT: the way reads went before). Rows alternate within
// each of 5 rounds; medians. The API's own figures: bench:api with BENCH_API_COMPARE.
import { createDatabase, type Queryable } from '@mi/lib/db/pool';
import { createTestDatabase, runtimeUrl, startTestEngine } from '../test/support/database';
import { percentile, table, writeSection } from './report';

const QUERIES = 4_000;
const ROUNDS = 5;
const engine = await startTestEngine();
const database = await createTestDatabase(engine.engine);
const owner = createDatabase(database.url, { max: 4 });
// As deployed: the API's login, bound by the row policies.
const api = createDatabase(runtimeUrl(engine.engine, database.url, 'api'), { max: 4 });
const { rows } = await owner.query<{ id: string }>(
  'bench.user',
  `INSERT INTO app_user (identity_id, email, username) VALUES ('bench', 'bench@example.test', 'bench') RETURNING id`,
);
const userId = rows[0].id;
await owner.query(
  'bench.meetings',
  `INSERT INTO meeting (user_id, title, source_type, start_time)
   SELECT $1, 'm' || n, 'text', now() - n * interval '1 minute' FROM generate_series(1, 50) n`,
  [userId],
);
const page =
  'SELECT id, title, start_time, created_at FROM meeting WHERE user_id = $1 ORDER BY start_time DESC LIMIT 50';
const read = (q: Queryable) => q.query('bench.page', page, [userId]);
const variants: [string, () => Promise<unknown>][] = [
  ['undeclared (the floor: no policy binds the owner)', () => read(owner)],
  ['declared in its round trip (as the API reads)', () => read(api.as({ userId }))],
  ['declared by a transaction (BEGIN … COMMIT)', () => api.as({ userId }).withTransaction(read)],
];

/** CPU µs per query, 4 at a time as a loaded instance would have them. */
async function cpuPerQuery(fn: () => Promise<unknown>): Promise<number> {
  for (let i = 0; i < 400; i++) await fn(); // warm-up: JIT, connections
  const before = process.cpuUsage();
  for (let i = 0; i < QUERIES; i += 4) await Promise.all([fn(), fn(), fn(), fn()]);
  const used = process.cpuUsage(before);
  return (used.user + used.system) / QUERIES;
}

const samples = variants.map((): number[] => []);
for (let r = 0; r < ROUNDS; r++) {
  const order = variants.map((_, i) => i);
  if (r % 2) order.reverse();
  for (const i of order) samples[i].push(await cpuPerQuery(variants[i][1]));
}
const floor = percentile(samples[0], 50);
const out = `Engine: ${engine.engine.label}. Node ${process.version}, this process's CPU per query, medians of ${ROUNDS} alternating rounds of ${QUERIES.toLocaleString('en')} reads of a 50-row page. Method: bench/declaration.ts.

${table(
  variants.map(([name], i) => ({
    read: name,
    'CPU/query': `${percentile(samples[i], 50).toFixed(1)} µs`,
    'ratio to undeclared': (percentile(samples[i], 50) / floor).toFixed(2),
  })),
)}`;
console.log(out);
writeSection('Declaration', out);
await Promise.all([owner.close(), api.close()]);
await database.close();
await engine.stop();
