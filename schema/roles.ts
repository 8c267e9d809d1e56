// The runtime roles (issue 38, decisions.md section 8), kept in step with the schema by db:apply.
// Each service kind connects as its own login, a member of one group role below: it owns no
// table, has no BYPASSRLS (the policies of schema.sql bind it) and holds only the grants its
// paths use. The schema owner is whoever runs db:apply (Cloud SQL: mi_owner).
import type pg from 'pg';

export type ServiceKind = 'api' | 'live' | 'sweep';
export const SERVICE_KINDS: readonly ServiceKind[] = ['api', 'live', 'sweep'];

/** The group role of each kind (Terraform grants it to the kind's Cloud SQL IAM user). */
export const RUNTIME_ROLES: Record<ServiceKind, string> = { api: 'mi_api', live: 'mi_live', sweep: 'mi_sweep' };

/**
 * Tables the live service creates rows in: the account of a user whose first call is a hello, takes,
 * their manifest and history, events, webhook deliveries.
 */
const LIVE_INSERTS = [
  'app_user',
  'recording',
  'recording_event_history',
  'segment_manifest',
  'meeting_audio_file',
  'transcription',
  'transcription_status_history',
  'event_outbox',
  'event_sequence',
  'webhook_delivery',
  'webhook_attempt',
];
/** The live service deletes only its webhook delivery queue rows. */
const LIVE_DELETES = ['webhook_delivery'];
/** Tables the sweep creates rows in: finalized takes, released claims, events. Never a meeting or user data. */
const SWEEP_INSERTS = [
  'meeting_audio_file',
  'transcription',
  'transcription_status_history',
  'recording_event_history',
  'event_outbox',
  'event_sequence',
  'webhook_delivery',
];

/** The sweep's partition upkeep (schema.sql), run with the owner's rights. */
const PARTITION_FUNCTIONS = ['attach_partition(text, date)', 'drop_partition(text, text)'];

/**
 * Each role's grants, as statements over the given tables. The REST functions read and write
 * every table but own none (no DROP, TRUNCATE, ALTER); live and sweep read and update all, and
 * insert and delete only where their paths do (the sweep deletes: retention, purge, erasure).
 */
export function grantStatements(tables: string[], partitions: string[] = []): string[] {
  const q = (t: string) => `"public"."${t}"`;
  const all = tables.map(q).join(', ');
  const some = (list: string[]) =>
    list
      .filter((t) => tables.includes(t))
      .map(q)
      .join(', ');
  const out: string[] = [];
  for (const role of Object.values(RUNTIME_ROLES)) {
    out.push(`REVOKE ALL ON ALL TABLES IN SCHEMA public FROM ${role}`);
    out.push(`REVOKE ALL ON ALL SEQUENCES IN SCHEMA public FROM ${role}`);
    out.push(`GRANT USAGE ON SCHEMA public TO ${role}`);
  }
  if (!tables.length) return out;
  out.push(`GRANT SELECT, INSERT, UPDATE, DELETE ON ${all} TO ${RUNTIME_ROLES.api}`);
  out.push(`GRANT SELECT, UPDATE ON ${all} TO ${RUNTIME_ROLES.live}`);
  out.push(`GRANT INSERT ON ${some(LIVE_INSERTS)} TO ${RUNTIME_ROLES.live}`);
  out.push(`GRANT DELETE ON ${some(LIVE_DELETES)} TO ${RUNTIME_ROLES.live}`);
  out.push(`GRANT SELECT, UPDATE, DELETE ON ${all} TO ${RUNTIME_ROLES.sweep}`);
  out.push(`GRANT INSERT ON ${some(SWEEP_INSERTS)} TO ${RUNTIME_ROLES.sweep}`);
  // Partitions have no policy of their own: only the sweep reaches them directly (retention's
  // batches by row address), and only it keeps the periods (schema.sql's owner-rights functions).
  if (partitions.length) out.push(`GRANT SELECT, DELETE ON ${partitions.map(q).join(', ')} TO ${RUNTIME_ROLES.sweep}`);
  for (const f of PARTITION_FUNCTIONS) {
    out.push(`REVOKE ALL ON FUNCTION ${f} FROM PUBLIC`);
    out.push(`GRANT EXECUTE ON FUNCTION ${f} TO ${RUNTIME_ROLES.sweep}`);
  }
  return out;
}

/** DB_RUNTIME_LOGINS "api=<login>,live=<login>,sweep=<login>": which login gets which role. */
export function parseRuntimeLogins(text: string | undefined): Partial<Record<ServiceKind, string>> {
  const out: Partial<Record<ServiceKind, string>> = {};
  for (const part of (text ?? '')
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)) {
    const [kind, login] = part.split('=').map((s) => s.trim());
    if (!SERVICE_KINDS.includes(kind as ServiceKind) || !login)
      throw new Error(`DB_RUNTIME_LOGINS: "${part}" is not api=<login>, live=<login> or sweep=<login>`);
    out[kind as ServiceKind] = login;
  }
  return out;
}

const ident = (name: string) => `"${name.replace(/"/g, '""')}"`;

/**
 * Creates the group roles if missing, sets their grants to grantStatements' (whatever they were),
 * and makes each named login a member of its kind's role. A login must exist already (Cloud SQL:
 * the IAM user Terraform creates). Idempotent; run by db:apply after the schema.
 */
export async function applyRoles(
  client: pg.Client,
  logins: Partial<Record<ServiceKind, string>> = {},
  log: (line: string) => void = () => {},
): Promise<void> {
  for (const role of Object.values(RUNTIME_ROLES)) {
    // Two applies on one cluster (tests) may race to create a role: the loser finds it made.
    await client.query(
      `DO $$ BEGIN CREATE ROLE ${role} NOLOGIN;
       EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$`,
    );
  }
  const { rows } = await client.query<{ name: string; partition: boolean }>(
    `SELECT relname AS name, relispartition AS partition FROM pg_class
      WHERE relnamespace = 'public'::regnamespace AND relkind IN ('r', 'p')
        AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = pg_class.oid AND d.deptype = 'e')
      ORDER BY relname`,
  );
  const names = (partition: boolean) => rows.filter((r) => r.partition === partition).map((r) => r.name);
  await client.query('BEGIN');
  try {
    for (const s of grantStatements(names(false), names(true))) await client.query(s);
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  }
  for (const [kind, login] of Object.entries(logins) as [ServiceKind, string][]) {
    const exists = await client.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [login]);
    if (!exists.rowCount) throw new Error(`DB_RUNTIME_LOGINS: the login ${login} (${kind}) does not exist`);
    await client.query(`GRANT ${RUNTIME_ROLES[kind]} TO ${ident(login)}`);
    log(`-- ${login} is a member of ${RUNTIME_ROLES[kind]}`);
  }
}
