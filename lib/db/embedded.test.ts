// The embedded database keeps working across pglite-socket upgrades: many pg connections at once,
// each with extended-protocol queries (what the package's own queue interleaves and breaks) and
// transactions that must stay isolated from the others' statements.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmbeddedPostgres, type EmbeddedPostgres } from './embedded';

let embedded: EmbeddedPostgres;
let pool: pg.Pool;
beforeAll(async () => {
  embedded = await startEmbeddedPostgres();
  pool = new pg.Pool({ connectionString: embedded.url, max: 8 });
  await pool.query('CREATE TABLE counter (id int PRIMARY KEY, n int NOT NULL)');
  await pool.query('INSERT INTO counter VALUES (1, 0)');
});
afterAll(async () => {
  await pool.end();
  await embedded.stop();
});

describe('embedded PGlite over the wire', () => {
  it('should answer parameterised queries from many connections at once', async () => {
    const answers = await Promise.all(
      Array.from({ length: 200 }, (_, i) => pool.query<{ v: number }>('SELECT $1::int + 1 AS v', [i])),
    );
    expect(answers.map((a) => a.rows[0].v)).toEqual(Array.from({ length: 200 }, (_, i) => i + 1));
  });

  it('should keep each transaction to its own connection until it ends', async () => {
    await Promise.all(
      Array.from({ length: 40 }, async () => {
        const client = await pool.connect();
        try {
          await client.query('BEGIN');
          const { rows } = await client.query<{ n: number }>('SELECT n FROM counter WHERE id = $1', [1]);
          await client.query('UPDATE counter SET n = $1 WHERE id = 1', [rows[0].n + 1]);
          await client.query('COMMIT');
        } finally {
          client.release();
        }
      }),
    );
    // Read-modify-write without locks loses updates unless transactions never interleave.
    expect((await pool.query('SELECT n FROM counter')).rows[0].n).toBe(40);
  });

  it('should roll back the open transaction of a connection that goes away', async () => {
    const client = new pg.Client({ connectionString: embedded.url });
    await client.connect();
    await client.query('BEGIN');
    await client.query('UPDATE counter SET n = -1 WHERE id = 1');
    await client.end();
    const { rows } = await pool.query('SELECT n FROM counter');
    expect(rows[0].n).toBe(40);
  });
});
