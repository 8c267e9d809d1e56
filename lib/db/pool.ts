// One pg Pool per process; every query goes through `Queryable.query(name, sql, params)` so
// each has a name (for logs and traces) and SQLSTATE errors are mapped in one place.
// Names are not server-side prepared statements: pglite-socket shares one backend session
// between connections, where a named statement would collide.
import pg from 'pg';
import { ApiError } from '../errors';

// Return bigint (int8) and numeric as JS numbers: sequences, byte counts and decimals of this
// domain stay far below 2^53, and the API speaks JSON numbers.
pg.types.setTypeParser(20, (v) => Number(v));
pg.types.setTypeParser(1700, (v) => Number(v));
// Dates stay 'YYYY-MM-DD' strings, as the API returns them.
pg.types.setTypeParser(1082, (v) => v);

export interface Queryable {
  query<R extends pg.QueryResultRow = any>(name: string, text: string, params?: unknown[]): Promise<pg.QueryResult<R>>;
}

export interface Database extends Queryable {
  readonly pool: pg.Pool;
  withTransaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

const RETRYABLE = new Set(['40001', '40P01']);

/** SQLSTATE → API error. Constraint names make the detail useful without leaking SQL. */
export function mapDbError(err: unknown, name: string): unknown {
  const e = err as { code?: string; constraint?: string; column?: string };
  switch (e?.code) {
    case '23505':
      return new ApiError('conflict', `already exists (${e.constraint ?? name})`);
    case '23503':
      return new ApiError('unprocessable', `references a record that does not exist (${e.constraint ?? name})`);
    case '23502':
      return new ApiError('unprocessable', `missing required field ${e.column ?? ''}`.trim());
    case '23514':
      return new ApiError('unprocessable', `value not allowed (${e.constraint ?? name})`);
    case '22P02':
    case '22001':
    case '22021': // character not in repertoire (NUL in text)
    case '22P05': // untranslatable character (lone surrogate)
    case '22003':
    case '22007':
    case '22008':
    case '22023':
      return new ApiError('unprocessable', 'invalid value');
    case '54000': // a value too large for an index row
      return new ApiError('unprocessable', 'a value is too large');
    case '57014':
      return new ApiError('unavailable', 'query took too long; try again');
    default:
      return err;
  }
}

function wrap(client: pg.Pool | pg.PoolClient): Queryable {
  return {
    async query(name, text, params) {
      try {
        return await client.query(text, params as unknown[]);
      } catch (err) {
        if (RETRYABLE.has((err as { code?: string }).code ?? '')) throw err; // withTransaction retries
        throw mapDbError(err, name);
      }
    },
  };
}

export function createDatabase(url: string, opts: { max?: number } = {}): Database {
  const pool = new pg.Pool({ connectionString: url, max: opts.max ?? 10 });
  // An idle client losing its connection must not crash the process.
  pool.on('error', () => {});
  const root = wrap(pool);
  return {
    pool,
    query: root.query,
    async withTransaction(fn) {
      for (let attempt = 1; ; attempt++) {
        const client = await pool.connect();
        let broken = false;
        try {
          await client.query('BEGIN');
          const result = await fn(wrap(client));
          await client.query('COMMIT');
          return result;
        } catch (err) {
          await client.query('ROLLBACK').catch(() => (broken = true));
          const code = (err as { code?: string }).code ?? '';
          if (RETRYABLE.has(code) && attempt < 4) continue;
          throw RETRYABLE.has(code) ? new ApiError('conflict', 'concurrent update; try again') : err;
        } finally {
          client.release(broken);
        }
      }
    },
    close: () => pool.end(),
  };
}
