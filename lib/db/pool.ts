// One pg Pool per process; every query goes through `Queryable.query(name, sql, params)` so
// each has a name (for logs and traces) and SQLSTATE errors are mapped in one place.
// Names are not server-side prepared statements: pglite-socket shares one backend session
// between connections, where a named statement would collide.
import pg from 'pg';
import { retry, withTimeout } from '../async';
import { DomainError } from '../errors';
import { instruments, watchPool } from '../telemetry/metrics';

// Return bigint (int8) and numeric as JS numbers: sequences, byte counts and decimals of this
// domain stay far below 2^53, and the API speaks JSON numbers.
pg.types.setTypeParser(20, (v) => Number(v));
pg.types.setTypeParser(1700, (v) => Number(v));
// Dates stay 'YYYY-MM-DD' strings, as the API returns them.
pg.types.setTypeParser(1082, (v) => v);
// Timestamps are ISO 8601 strings, as the API returns them (milliseconds, UTC): rows leave the
// repositories in the API's shape, with no Date to convert on the way out.
// pg's own parsers read every form the server prints (JavaScript's Date.parse does not).
const parseTimestamptz = pg.types.getTypeParser(1184);
const parseTimestamp = pg.types.getTypeParser(1114);
pg.types.setTypeParser(1184, isoOfTimestamptz);
pg.types.setTypeParser(1114, (v) => (parseTimestamp(v) as Date).toISOString());

// The form a UTC session prints ('2026-11-25 23:00:00.123456+00') is rewritten as text: through a
// Date it cost 2-5 % of a list request's CPU. Every other form (another zone, BC, infinity) goes
// through pg's parser. Both truncate to milliseconds.
const UTC_TIMESTAMPTZ = /^(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d)(?:\.(\d{1,6}))?\+00$/;
export function isoOfTimestamptz(v: string): string {
  const m = UTC_TIMESTAMPTZ.exec(v);
  if (!m) return (parseTimestamptz(v) as Date).toISOString();
  return `${m[1]}T${m[2]}.${(m[3] ?? '').padEnd(3, '0').slice(0, 3)}Z`;
}

export interface Queryable {
  query<R extends pg.QueryResultRow = Record<string, unknown>>(
    name: string,
    text: string,
    params?: unknown[],
  ): Promise<pg.QueryResult<R>>;
}

/**
 * Whose unit of work it is (issue 38): a user's (the row policies of schema.sql show only that
 * user's rows) or a service kind's (ML writes, live, sweep, dispatcher, erasure: every user's).
 * Work that declared neither sees no user's row.
 */
export type Scope = { userId: string } | { service: 'api' | 'live' | 'sweep' };

export interface Database extends Queryable {
  readonly pool: pg.Pool;
  /** The same database for one scope: each of its transactions, and each query, declares it. */
  as(scope: Scope): Database;
  /** Transactions retried after a serialization failure or deadlock (40001, 40P01), since start. */
  readonly retries: number;
  withTransaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

const RETRYABLE = new Set(['40001', '40P01']);
const isRetryable = (err: unknown) => RETRYABLE.has((err as { code?: string }).code ?? '');
/** Tries of a transaction that keeps failing on serialization or deadlock. */
const TX_ATTEMPTS = 4;
/** Waits between them, jittered (backoffMs), so that the writers that collided do not collide again in step. */
const TX_RETRY_STEPS_MS = [2, 10, 40];

/** How long a client should wait before retrying when the database is busy or unreachable. */
export const DB_RETRY_AFTER_SECONDS = 2;

// The database is overloaded, restarting or unreachable: a retry later can succeed.
const UNAVAILABLE_SQLSTATES = new Set([
  '57014', // query_canceled: statement_timeout
  '55P03', // lock_not_available: lock_timeout
  '53000',
  '53100',
  '53200',
  '53300', // insufficient resources, too many connections
  '57P01',
  '57P02',
  '57P03', // admin/crash shutdown, cannot connect now
  '08000',
  '08001',
  '08003',
  '08004',
  '08006', // connection exceptions
]);
const UNAVAILABLE_NODE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH']);
// pg reports a dropped socket and an exhausted pool only by message; DB_IAM_AUTH: no login token (iam-login.ts).
const UNAVAILABLE_MESSAGES =
  /^(Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|DB_IAM_AUTH:)/;

/** How long readiness (GET /readyz) waits for the database to answer (decisions.md section 7). */
export const READY_TIMEOUT_MS = 1_000;

/** The readiness check: null when the database answered within READY_TIMEOUT_MS, else a 503 to send. */
export async function notReady(db: Queryable): Promise<DomainError | null> {
  return withTimeout(db.query('ready', 'SELECT 1'), READY_TIMEOUT_MS).then(
    () => null,
    () =>
      new DomainError(
        'unavailable',
        `the database does not answer within ${READY_TIMEOUT_MS} ms`,
        undefined,
        DB_RETRY_AFTER_SECONDS,
      ),
  );
}

/** True when the error means "the database cannot serve now", not "this request is wrong". */
export function isDatabaseUnavailable(err: unknown): boolean {
  const e = err as { code?: string; message?: string };
  return (
    UNAVAILABLE_SQLSTATES.has(e?.code ?? '') ||
    UNAVAILABLE_NODE_CODES.has(e?.code ?? '') ||
    UNAVAILABLE_MESSAGES.test(e?.message ?? '')
  );
}

/**
 * The columns of a key violation ("Key (user_id, display_name)=(…) already exists."), without
 * the tenant column and function wrappers: a detail names fields, never constraints or SQL.
 */
function keyFields(detail: string | undefined): string[] {
  const key = /^Key \((.+?)\)=/.exec(detail ?? '')?.[1] ?? '';
  return key
    .split(', ')
    .map((c) => c.replace(/^lower\((\w+)(::\w+)?\)$/, '$1'))
    .filter((c) => /^\w+$/.test(c) && c !== 'user_id');
}

/**
 * The fields of a key violation when its detail is withheld (PostgreSQL leaves the key out under
 * row-level security): from the constraint's default name, `{table}_{columns}_key` / `_fkey`.
 */
function constraintFields(e: { constraint?: string; table?: string }): string[] {
  if (!e.constraint || !e.table || !e.constraint.startsWith(`${e.table}_`)) return [];
  const stem = e.constraint
    .slice(e.table.length + 1)
    .replace(/_f?key$/, '')
    .replace(/^user_id(_|$)/, '');
  return stem && /^\w+$/.test(stem) ? [stem] : [];
}

/** SQLSTATE → API error. Details name the fields involved, never a constraint or a table. */
export function mapDbError(err: unknown, _name: string): unknown {
  const e = err as { code?: string; constraint?: string; column?: string; table?: string; detail?: string };
  if (err instanceof DomainError) return err;
  if (isDatabaseUnavailable(err)) {
    const detail =
      e?.code === '57014' || e?.code === '55P03'
        ? 'the database is busy; try again'
        : 'the database is unavailable; try again';
    return new DomainError('unavailable', detail, undefined, DB_RETRY_AFTER_SECONDS);
  }
  switch (e?.code) {
    case '23505': {
      const fields = e.detail ? keyFields(e.detail) : constraintFields(e);
      return new DomainError(
        'already_exists',
        fields.length ? `a record with this ${fields.join(' and ')} already exists` : 'this record already exists',
      );
    }
    case '23503': {
      const fields = e.detail ? keyFields(e.detail) : constraintFields(e);
      return new DomainError(
        'unprocessable',
        `${fields.length ? fields.join(', ') : 'a reference'}: references a record that does not exist`,
      );
    }
    case '23502':
      return new DomainError('unprocessable', `missing required field ${e.column ?? ''}`.trim());
    case '23514': {
      // Check constraints are named {table}_{column}_check.
      const field =
        e.table && e.constraint?.startsWith(`${e.table}_`)
          ? e.constraint.slice(e.table.length + 1).replace(/_check$/, '')
          : '';
      return new DomainError('unprocessable', field ? `value not allowed for ${field}` : 'value not allowed');
    }
    case '22P02':
    case '22001':
    case '22021': // character not in repertoire (NUL in text)
    case '22P05': // untranslatable character (lone surrogate)
    case '22003':
    case '22007':
    case '22008':
    case '22023':
      return new DomainError('unprocessable', 'invalid value');
    case '54000': // a value too large for an index row
      return new DomainError('unprocessable', 'a value is too large');
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
        if (isRetryable(err)) throw err; // withTransaction retries
        throw mapDbError(err, name);
      }
    },
  };
}

export interface DatabaseOptions {
  /** Connections in this process's pool. */
  max?: number;
  /** Each statement's limit (server side, every connection); 0 = none. */
  statementTimeoutMs?: number;
  /** How long a statement waits for a lock (server side); 0 = none. */
  lockTimeoutMs?: number;
  /** How long a caller waits for a free connection or a new one before a 503. */
  connectTimeoutMs?: number;
  /** Asked for each new connection's password (a short-lived token), instead of the URL's. */
  password?: () => Promise<string>;
}

/** pg lets the URL's empty password override a `password` option, so each client gets the function itself. */
function clientWithPassword(password: () => Promise<string>): typeof pg.Client {
  return class extends pg.Client {
    constructor(config?: pg.ClientConfig) {
      super(config);
      (this as { password?: unknown }).password = password;
    }
  };
}

/**
 * This code's release (schema/releases holds the earlier ones' schemas). Its sessions carry it in
 * application_name, so that db:apply can tell whether an older release still runs on the database
 * (schema/rollout.ts); releases before 4 named none.
 */
export const RELEASE = 4;
export const SESSION_NAME = `meeting-intelligence r${RELEASE}`;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The statement that opens a scope's transaction: BEGIN and the declaration, transaction-local, in
 * one round trip (a simple-protocol batch takes no parameters, hence the checked literal).
 */
export function beginStatement(scope: Scope | undefined): string {
  if (!scope) return 'BEGIN';
  if ('userId' in scope) {
    if (!UUID.test(scope.userId)) throw new Error(`not a user id: ${scope.userId}`);
    return `BEGIN; SELECT set_config('app.user_id', '${scope.userId}', true)`;
  }
  if (!/^[a-z]+$/.test(scope.service)) throw new Error(`not a service kind: ${scope.service}`);
  return `BEGIN; SELECT set_config('app.service', '${scope.service}', true)`;
}

/** The setting a scope declares, and its value. */
function declaration(scope: Scope): [setting: string, value: string] {
  return 'userId' in scope ? ['app.user_id', scope.userId] : ['app.service', scope.service];
}

type Connection = { parse(m: object): void; bind(m: object): void; execute(m: object): void };
// pg's Query hooks (pg-cursor's and pg-query-stream's too), which its typings leave out.
declare module 'pg' {
  interface Query {
    prepare(connection: Connection): void;
    handleDataRow(msg: unknown): void;
    handleCommandComplete(msg: unknown, connection: unknown): void;
  }
}

/**
 * A scope's statement outside a transaction, in one round trip: the declaration is parsed, bound
 * and executed ahead of the statement and before their one Sync, so both run in the same implicit
 * transaction and `set_config(..., true)` holds for this statement only (so also under the
 * pooler's transaction mode). pg's pipeline mode would not do: it syncs each query. BEGIN, the
 * statement and COMMIT cost a read 68–134 % more CPU (issue 38). The declaration's row and
 * completion are not the caller's result.
 */
class DeclaredQuery extends pg.Query {
  private declaring = true;
  constructor(
    private readonly declared: [string, string],
    text: string,
    values: unknown[] | undefined,
  ) {
    super({ text, values, queryMode: 'extended' } as pg.QueryConfig);
  }
  prepare(connection: Connection) {
    connection.parse({ text: 'SELECT set_config($1, $2, true)', name: '', types: [] });
    connection.bind({ portal: '', statement: '', values: this.declared });
    connection.execute({ portal: '', rows: 0 });
    super.prepare(connection);
  }
  handleDataRow(msg: unknown) {
    if (!this.declaring) super.handleDataRow(msg);
  }
  handleCommandComplete(msg: unknown, connection: unknown) {
    if (this.declaring) this.declaring = false;
    else super.handleCommandComplete(msg, connection);
  }
}

export function createDatabase(url: string, opts: DatabaseOptions = {}): Database {
  const pool = new pg.Pool({
    connectionString: url,
    max: opts.max ?? 10,
    connectionTimeoutMillis: opts.connectTimeoutMs ?? 5_000,
    application_name: SESSION_NAME, // a URL's own application_name wins
    ...(opts.password ? { Client: clientWithPassword(opts.password) } : {}),
    // Sent as startup parameters: every connection of the pool carries them.
    ...(opts.statementTimeoutMs ? { statement_timeout: opts.statementTimeoutMs } : {}),
    ...(opts.lockTimeoutMs ? { lock_timeout: opts.lockTimeoutMs } : {}),
  });
  // A client losing its connection (a database restart) must not crash the process. Idle, the
  // pool drops it; checked out, pg emits 'error' on the client itself, and its next query fails
  // (mapped to 503) and the client is released as broken.
  pool.on('error', () => {});
  pool.on('connect', (client) => client.on('error', () => {}));
  const root = wrap(pool);
  const unwatch = watchPool(pool);
  let retries = 0;
  async function withTransaction<T>(scope: Scope | undefined, fn: (tx: Queryable) => Promise<T>): Promise<T> {
    const begin = beginStatement(scope);
    const once = async () => {
      const waitStarted = performance.now();
      const client = await pool.connect().catch((err: unknown) => {
        throw mapDbError(err, 'connect');
      });
      // Transactions only: pool.query checks out inside pg, out of our sight (the gauge of waiting callers covers it).
      instruments().dbConnectWait.record(performance.now() - waitStarted);
      let broken = false;
      try {
        await client.query(begin);
        const result = await fn(wrap(client));
        await client.query('COMMIT');
        return result;
      } catch (err) {
        await client.query('ROLLBACK').catch(() => (broken = true));
        throw isRetryable(err) ? err : mapDbError(err, 'transaction');
      } finally {
        client.release(broken);
      }
    };
    try {
      return await retry(once, {
        steps: TX_RETRY_STEPS_MS,
        attempts: TX_ATTEMPTS,
        giveUp: (err) => !isRetryable(err),
        onRetry: () => retries++,
      });
    } catch (err) {
      // Retry-After (0: at once, with the client's own backoff) tells clients this conflict is retryable.
      if (isRetryable(err))
        throw new DomainError('concurrent_update', 'concurrent update; nothing was written, try again', undefined, 0);
      throw err;
    }
  }
  const declaredQuery =
    (declared: [string, string]): Queryable['query'] =>
    async (name, text, params) => {
      try {
        return (await pool.query(new DeclaredQuery(declared, text, params))) as unknown as pg.QueryResult<never>;
      } catch (err) {
        throw mapDbError(err, name);
      }
    };
  const view = (scope: Scope | undefined): Database => ({
    pool,
    get retries() {
      return retries;
    },
    as: (next) => view(next),
    // The unscoped pool declares nothing.
    query: scope ? declaredQuery(declaration(scope)) : root.query,
    withTransaction: (fn) => withTransaction(scope, fn),
    close: () => (unwatch(), pool.end()),
  });
  return view(undefined);
}
