// account_export: a user's account exports (POST /me/exports, docs/exports.md). The builder's
// claim is a lease: `attempts` counts claims and names the current one, so a builder whose lease
// lapsed and was taken over cannot renew, finish or fail the row any more.
import type { Queryable } from '../db/pool';
import { createdKey, decodeCreatedCursor, toCreatedPage, type Page } from '../domain/pagination';

export type ExportStatus = 'pending' | 'running' | 'ready' | 'failed';

export interface AccountExport {
  id: string;
  user_id: string;
  status: ExportStatus;
  attempts: number;
  storage_path: string | null;
  byte_count: number | null;
  error: string | null;
  created_at: string;
  completed_at: string | null;
}

/** Claims after which an export whose builder keeps dying is failed. */
export const EXPORT_MAX_ATTEMPTS = 3;

const COLUMNS =
  'id, user_id, status, attempts, storage_path, byte_count::float8 AS byte_count, error, created_at, completed_at';

/** Where an attempt's archive is stored; everything of an export is under exportPrefix. */
export const exportPrefix = (userId: string, exportId?: string) =>
  exportId ? `exports/${userId}/${exportId}/` : `exports/${userId}/`;
export const archivePath = (e: Pick<AccountExport, 'user_id' | 'id' | 'attempts'>) =>
  `${exportPrefix(e.user_id, e.id)}${e.attempts}.zip`;

/** A new pending export; null when the user has an unfinished one (the partial unique index). */
export async function insertExport(tx: Queryable, userId: string): Promise<AccountExport | null> {
  const { rows } = await tx.query<AccountExport>(
    'account_export.insert',
    `INSERT INTO account_export (user_id) VALUES ($1)
     ON CONFLICT (user_id) WHERE status IN ('pending', 'running') DO NOTHING RETURNING ${COLUMNS}`,
    [userId],
  );
  return rows[0] ?? null;
}

export async function getExport(q: Queryable, userId: string, id: string): Promise<AccountExport | null> {
  const { rows } = await q.query<AccountExport>(
    'account_export.get',
    `SELECT ${COLUMNS} FROM account_export WHERE id = $1 AND user_id = $2`,
    [id, userId],
  );
  return rows[0] ?? null;
}

/** The user's exports, newest first. */
export async function listExports(
  q: Queryable,
  userId: string,
  f: { limit: number; cursor?: string },
): Promise<Page<AccountExport>> {
  const [beforeAt, beforeId] = decodeCreatedCursor(f.cursor);
  const { rows } = await q.query<AccountExport & { page_key: string }>(
    'account_export.list',
    `SELECT ${COLUMNS}, ${createdKey()} FROM account_export
     WHERE user_id = $1 AND ($2::timestamptz IS NULL OR (created_at, id) < ($2::timestamptz, $3::uuid))
     ORDER BY created_at DESC, id DESC LIMIT $4`,
    [userId, beforeAt, beforeId, f.limit + 1],
  );
  return toCreatedPage(rows, f.limit);
}

/**
 * Claims the oldest export to build: pending, or running with a lapsed lease (its builder died),
 * under EXPORT_MAX_ATTEMPTS claims. SKIP LOCKED: two sweeps never claim the same row.
 */
export async function claimExport(tx: Queryable, leaseSeconds: number): Promise<AccountExport | null> {
  // no guard: the outer WHERE re-checks the state after any wait, so a row is claimed once with or
  // without the lock; SKIP LOCKED only spares a second sweep the wait.
  const { rows } = await tx.query<AccountExport>(
    'account_export.claim',
    `UPDATE account_export SET status = 'running', attempts = attempts + 1,
       lease_expires_at = now() + make_interval(secs => $1::double precision), updated_at = now()
     WHERE id = (SELECT id FROM account_export
                 WHERE (status = 'pending' OR (status = 'running' AND lease_expires_at < now())) AND attempts < $2
                 ORDER BY created_at LIMIT 1 FOR UPDATE SKIP LOCKED)
       AND (status = 'pending' OR (status = 'running' AND lease_expires_at < now()))
     RETURNING ${COLUMNS}`,
    [leaseSeconds, EXPORT_MAX_ATTEMPTS],
  );
  return rows[0] ?? null;
}

/** Extends the claim; false when it is no longer the current one (lapsed and taken, cancelled, gone). */
export async function renewExportLease(
  tx: Queryable,
  e: Pick<AccountExport, 'id' | 'attempts'>,
  leaseSeconds: number,
): Promise<boolean> {
  const { rowCount } = await tx.query(
    'account_export.renew',
    `UPDATE account_export SET lease_expires_at = now() + make_interval(secs => $3::double precision), updated_at = now()
     WHERE id = $1 AND attempts = $2 AND status = 'running'`,
    [e.id, e.attempts, leaseSeconds],
  );
  return rowCount === 1;
}

/** running → ready under the current claim; false when the claim was lost (the caller deletes its archive). */
export async function markExportReady(
  tx: Queryable,
  e: Pick<AccountExport, 'id' | 'attempts'>,
  storagePath: string,
  byteCount: number,
): Promise<boolean> {
  const { rowCount } = await tx.query(
    'account_export.ready',
    // (attempts = $2 in SET changes nothing under the claim's condition; it keeps $2 typed should that go.)
    `UPDATE account_export SET status = 'ready', attempts = $2, storage_path = $3, byte_count = $4, completed_at = now(),
       lease_expires_at = NULL, updated_at = now()
     -- guard: account-export-ready-current-claim | remove: AND attempts = $2 | test: test/api/account-export.test.ts :: lost its lease
     WHERE id = $1 AND status = 'running' AND attempts = $2`,
    [e.id, e.attempts, storagePath, byteCount],
  );
  return rowCount === 1;
}

/** running → failed under the current claim (an error that a retry would repeat). */
export async function markExportFailed(
  tx: Queryable,
  e: Pick<AccountExport, 'id' | 'attempts'>,
  error: string,
): Promise<boolean> {
  const { rowCount } = await tx.query(
    'account_export.failed',
    `UPDATE account_export SET status = 'failed', error = $3, completed_at = now(), lease_expires_at = NULL, updated_at = now()
     WHERE id = $1 AND attempts = $2 AND status = 'running'`,
    [e.id, e.attempts, error],
  );
  return rowCount === 1;
}

/** Exports whose builders died EXPORT_MAX_ATTEMPTS times: failed for good. Returns them (user, id). */
export async function failAbandonedExports(tx: Queryable): Promise<{ id: string; user_id: string }[]> {
  const { rows } = await tx.query<{ id: string; user_id: string }>(
    'account_export.abandon',
    `UPDATE account_export SET status = 'failed', error = $2, completed_at = now(), lease_expires_at = NULL, updated_at = now()
     WHERE status = 'running' AND lease_expires_at < now() AND attempts >= $1 RETURNING id, user_id`,
    [EXPORT_MAX_ATTEMPTS, `export abandoned after ${EXPORT_MAX_ATTEMPTS} attempts`],
  );
  return rows;
}

/** DELETE /me: the user's unfinished exports end as failed (a builder at work loses its claim). */
export async function cancelUserExports(tx: Queryable, userId: string): Promise<string[]> {
  const { rows } = await tx.query<{ id: string }>(
    'account_export.cancel',
    `UPDATE account_export SET status = 'failed', error = 'cancelled: the account is being erased',
       completed_at = now(), lease_expires_at = NULL, updated_at = now()
     WHERE user_id = $1 AND status IN ('pending', 'running') RETURNING id`,
    [userId],
  );
  return rows.map((r) => r.id);
}

/** Finished exports past retention, oldest first. */
export async function expiredExports(q: Queryable, retentionHours: number, limit: number): Promise<AccountExport[]> {
  const { rows } = await q.query<AccountExport>(
    'account_export.expired',
    `SELECT ${COLUMNS} FROM account_export
     WHERE completed_at < now() - make_interval(secs => $1::double precision * 3600) ORDER BY completed_at LIMIT $2`,
    [retentionHours, limit],
  );
  return rows;
}

export async function deleteExport(tx: Queryable, id: string): Promise<boolean> {
  const { rowCount } = await tx.query('account_export.delete', 'DELETE FROM account_export WHERE id = $1', [id]);
  return rowCount === 1;
}
