// Applying a plan while the service writes: what runs outside the plan's transaction, and how
// long anything may wait for a lock. A plain CREATE INDEX blocks every writer of its table for
// the whole build, and any statement queued for a lock blocks every statement queued after it.
import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';

const CREATE_INDEX = new RegExp(
  String.raw`^\s*create\s+(unique\s+)?index\s+(?!concurrently\b)(?:if\s+not\s+exists\s+)?("?[\w$"]+"?)\s+` +
    String.raw`on\s+(?:only\s+)?("?[\w.$"]+)`,
  'i',
);
const DROP_INDEX = /^\s*drop\s+index\s+(?!concurrently\b)(if\s+exists\s+)?("?[\w.$"]+)\s*;?\s*$/i;
const VALIDATE = /^\s*alter\s+table\s+(?:only\s+)?("?[\w.$"]+)\s+validate\s+constraint\b/i;
const ALTER_TABLE = /^\s*alter\s+table\s+(?:only\s+)?("?[\w.$"]+)/i;

const bare = (name: string) => name.replace(/"/g, '').split('.').pop()!;

/**
 * Splits a plan into transactions, run in order, and statements run after them one at a time
 * outside any transaction. On a table of at least `largeRows` rows, index builds and drops run
 * CONCURRENTLY (writers go on; new indexes last, so queries keep an index to use until then), and
 * so do constraint validations (SHARE UPDATE EXCLUSIVE: writers go on); an index another
 * statement names (a constraint USING INDEX) stays in a transaction. A statement that rewrites a
 * large table is a transaction of its own, so that its long exclusive lock is on that table alone
 * and the locks of the rest of the plan are not held for as long. The plan is declarative: an
 * apply stopped between its transactions is finished by the next apply's diff.
 */
export async function splitOnline(client: pg.Client, plan: string[], largeRows: number) {
  const sizes = new Map<string, boolean>();
  const isLarge = async (table: string) => {
    const name = bare(table);
    if (!name) return false;
    if (!sizes.has(name)) {
      const exists = (await client.query('SELECT to_regclass($1) AS t', [`public.${name}`])).rows[0].t !== null;
      const count = `SELECT count(*)::int AS n FROM (SELECT 1 FROM "public"."${name}" LIMIT $1) r`;
      const rows = exists ? (await client.query<{ n: number }>(count, [largeRows])).rows : [{ n: 0 }];
      sizes.set(name, rows[0].n >= largeRows);
    }
    return sizes.get(name)!;
  };
  const { rows: indexes } = await client.query<{ name: string; table: string }>(
    `SELECT indexname AS name, tablename AS table FROM pg_indexes WHERE schemaname = 'public'`,
  );
  const tableOf = new Map(indexes.map((i) => [i.name, i.table]));
  const transactions: string[][] = [[]];
  const creates: string[] = [];
  const drops = new Map<string, string>();
  const validations: string[] = [];
  for (const s of plan) {
    const create = CREATE_INDEX.exec(s);
    const drop = DROP_INDEX.exec(s);
    const validate = VALIDATE.exec(s);
    const namedElsewhere = (name: string) =>
      plan.some((o) => o !== s && !DROP_INDEX.test(o) && new RegExp(`\\b${name}\\b`).test(o));
    if (create && (await isLarge(create[3])) && !namedElsewhere(bare(create[2]))) {
      creates.push(s.replace(/^\s*create\s+(unique\s+)?index\s+/i, (m) => `${m.trimEnd()} CONCURRENTLY `));
    } else if (drop && tableOf.has(bare(drop[2])) && (await isLarge(tableOf.get(bare(drop[2]))!))) {
      drops.set(bare(drop[2]), `drop index concurrently ${drop[1] ?? ''}${drop[2]};`);
    } else if (validate && (await isLarge(validate[1]))) {
      validations.push(s);
    } else if (rewritesTable(s) && (await isLarge(ALTER_TABLE.exec(s)?.[1] ?? ''))) {
      transactions.push([s], []);
    } else transactions.at(-1)!.push(s);
  }
  // A drop of an index rebuilt under the same name goes right before its build; other drops last.
  const online: string[] = [];
  for (const c of creates) {
    const name = bare(CREATE_INDEX.exec(c.replace(/\s+concurrently\b/i, ''))![2]);
    if (drops.has(name)) online.push(drops.get(name)!);
    drops.delete(name);
    online.push(c);
  }
  return { transactions: transactions.filter((t) => t.length), online: [...online, ...drops.values(), ...validations] };
}

/** Runs one statement of the online phase; a build that fails leaves no invalid index behind. */
export async function runOnline(client: pg.Client, statement: string, lockTimeoutMs: number): Promise<void> {
  await client.query(`SET lock_timeout = ${Math.round(lockTimeoutMs)}`);
  try {
    await client.query(statement);
  } catch (err) {
    (err as { statement?: string }).statement = statement;
    const create = CREATE_INDEX.exec(statement.replace(/\s+concurrently\b/i, ''));
    if (create) await client.query(`DROP INDEX CONCURRENTLY IF EXISTS ${create[2]}`);
    throw err;
  } finally {
    await client.query('RESET lock_timeout');
  }
}

// What rolls the attempt back for the service's sake, not for anything wrong in the plan: a lock
// wait past the timeout, or a deadlock with a service transaction that locks the same tables in
// another order (the server aborts one of the two; when it picks the apply, the apply tries again).
const GIVE_WAY: Record<string, string> = {
  '55P03': 'waited too long for a lock',
  '40P01': 'deadlocked with another session',
};

/** Retries `attempt` while it fails for a lock timeout (55P03) or a deadlock (40P01). */
export async function withLockRetry(
  opts: { retries: number; log: (line: string) => void },
  attempt: () => Promise<void>,
): Promise<void> {
  for (let tried = 0; ; tried++) {
    try {
      return await attempt();
    } catch (err) {
      const reason = GIVE_WAY[(err as { code?: string }).code ?? ''];
      if (!reason || tried >= opts.retries) throw err;
      const at = (err as { statement?: string }).statement?.replace(/\s+/g, ' ').slice(0, 80);
      opts.log(`-- ${reason} (try ${tried + 1})${at ? ` at: ${at}` : ''}, retrying`);
      await sleep(200 + Math.random() * 800);
    }
  }
}

/** Drops the indexes a cut-short CONCURRENTLY build left invalid, so that the diff rebuilds them. */
export async function dropInvalidIndexes(client: pg.Client, log: (line: string) => void): Promise<void> {
  const { rows } = await client.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
     WHERE c.relnamespace = 'public'::regnamespace AND NOT i.indisvalid`,
  );
  for (const { name } of rows) {
    log(`-- dropping invalid index ${name} (a build cut short); the plan rebuilds it`);
    await client.query(`DROP INDEX CONCURRENTLY IF EXISTS "public"."${name}"`);
  }
}

/** Whether a statement rewrites its table under an exclusive lock (logged, so the operator knows). */
export const rewritesTable = (statement: string) =>
  /\badd\s+column\b.*\bgenerated\s+always\s+as\b.*\bstored\b/is.test(statement) ||
  /\balter\s+column\s+\S+\s+(set\s+data\s+)?type\b/i.test(statement);
