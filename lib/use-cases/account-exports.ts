// Account export (decisions.md section 8, docs/exports.md): POST /me/exports records a pending
// export; the sweep builds it off the request (buildDueExports) under a lease it renews while it
// streams the archive from storage to storage; retention deletes it. Every change of an export's
// state emits EntityChanged account_export to its user.
import type { ObjectStore } from '../adapters/storage';
import type { Config } from '../config';
import { DomainError } from '../errors';
import { changed } from '../events/catalogue';
import { formatTranscript, exportLines } from '../repositories/transcript-export';
import * as archive from '../repositories/account-archive';
import * as exportsRepo from '../repositories/account-exports';
import type { AccountExport } from '../repositories/account-exports';
import { takeComposition } from '../repositories/finalize';
import {
  type ArchiveEntry,
  takeAudioExtension,
  takeAudioStream,
  uploadExtension,
  writeZip,
} from '../objects/zip-archive';
import { userOf, type UseCase } from './use-case';
import type { Workflow, WorkflowDeps } from './workflow';

/** What GET /me/exports[/{id}] answers for an export. */
export interface ExportView {
  id: string;
  status: exportsRepo.ExportStatus;
  created_at: string;
  completed_at: string | null;
  byte_count: number | null;
  url: string | null;
  url_expires_at: string | null;
  error: string | null;
}

const updated = (e: Pick<AccountExport, 'id'>) => changed('account_export', 'updated', e.id, null);

/** POST /me/exports: a pending export; invalid_state while the user has an unfinished one. */
export const requestExport: UseCase<void, { id: string; status: 'pending'; created_at: string }> = async (ctx) => {
  const userId = userOf(ctx);
  const e = await exportsRepo.insertExport(ctx.tx, userId);
  if (!e)
    throw new DomainError(
      'invalid_state',
      'an export of this account is already pending or running; wait until it is ready or failed',
    );
  ctx.emit(userId, changed('account_export', 'created', e.id, null));
  return { id: e.id, status: 'pending', created_at: e.created_at };
};

/** The API's view of an export: a fresh signed link while it is ready. */
export async function exportView(
  store: ObjectStore,
  config: Pick<Config, 'ACCOUNT_EXPORT_URL_TTL_SECONDS'>,
  e: AccountExport,
): Promise<ExportView> {
  let url: string | null = null;
  let expires: string | null = null;
  if (e.status === 'ready' && e.storage_path) {
    const signed = await store.signedReadUrl(e.storage_path, config.ACCOUNT_EXPORT_URL_TTL_SECONDS);
    url = signed.url;
    expires = signed.expiresAt.toISOString();
  }
  return {
    id: e.id,
    status: e.status,
    created_at: e.created_at,
    completed_at: e.completed_at,
    byte_count: e.byte_count,
    url,
    url_expires_at: expires,
    error: e.error,
  };
}

// The builder's steps, each its own unit of work (the service acts; events go to the export's user).
const claim: UseCase<number, AccountExport | null> = async (ctx, leaseSeconds) => {
  const e = await exportsRepo.claimExport(ctx.tx, leaseSeconds);
  if (e) ctx.emit(e.user_id, updated(e));
  return e;
};
const renew: UseCase<{ e: AccountExport; leaseSeconds: number }, boolean> = (ctx, { e, leaseSeconds }) =>
  exportsRepo.renewExportLease(ctx.tx, e, leaseSeconds);
const ready: UseCase<{ e: AccountExport; path: string; bytes: number }, boolean> = async (ctx, { e, path, bytes }) => {
  const done = await exportsRepo.markExportReady(ctx.tx, e, path, bytes);
  if (done) ctx.emit(e.user_id, updated(e));
  return done;
};
const failed: UseCase<{ e: AccountExport; error: string }, boolean> = async (ctx, { e, error }) => {
  const done = await exportsRepo.markExportFailed(ctx.tx, e, error);
  if (done) ctx.emit(e.user_id, updated(e));
  return done;
};
const abandon: UseCase<void, number> = async (ctx) => {
  const gone = await exportsRepo.failAbandonedExports(ctx.tx);
  for (const e of gone) ctx.emit(e.user_id, updated(e));
  return gone.length;
};
const forget: UseCase<string, boolean> = (ctx, id) => exportsRepo.deleteExport(ctx.tx, id);

/** DELETE /me's part (in the erasure request's transaction): unfinished exports end as failed. */
export const cancelExports: UseCase<void, void> = async (ctx) => {
  const userId = userOf(ctx);
  for (const id of await exportsRepo.cancelUserExports(ctx.tx, userId))
    ctx.emit(userId, changed('account_export', 'updated', id, null));
};

export interface ExportDeps extends WorkflowDeps {
  config: Pick<Config, 'ACCOUNT_EXPORT_LEASE_SECONDS' | 'ACCOUNT_EXPORT_RETENTION_HOURS'>;
}

/** Hooks for tests: a builder that dies (abort) once the archive is under way. */
export interface BuildOptions {
  signal?: AbortSignal;
  /** Called as each file goes into the archive. */
  onFile?: (path: string) => void;
}

const json = (value: unknown) => Buffer.from(`${JSON.stringify(value, null, 2)}\n`);

/** The archive's files after the manifest, in order (docs/exports.md): opened one at a time. */
async function* archiveEntries(deps: WorkflowDeps, userId: string): AsyncGenerator<ArchiveEntry> {
  const { db, store } = deps;
  yield { path: 'account.json', open: async () => json(await archive.accountDoc(db, userId)) };
  yield { path: 'people.json', open: async () => json(await archive.peopleDoc(db, userId)) };
  yield { path: 'tags.json', open: async () => json(await archive.tagsDoc(db, userId)) };
  yield { path: 'tasks.json', open: async () => json(await archive.tasksDoc(db, userId)) };
  yield { path: 'notes.json', open: async () => json(await archive.notesDoc(db, userId)) };
  yield { path: 'threads.json', open: async () => json(await archive.threadsDoc(db, userId)) };
  for (const meetingId of await archive.archiveMeetingIds(db, userId)) {
    const doc = await archive.meetingDoc(db, userId, meetingId);
    if (!doc) continue; // deleted meanwhile
    const dir = `meetings/${meetingId}`;
    yield { path: `${dir}/meeting.json`, open: async () => json(doc) };
    const transcriptionId = await archive.latestTranscriptionId(db, meetingId);
    if (transcriptionId) {
      const meta = { transcription_id: transcriptionId, meeting_id: meetingId };
      const lines = await exportLines(db, transcriptionId);
      yield { path: `${dir}/transcript.json`, open: async () => Buffer.from(formatTranscript('json', lines, meta)) };
      yield { path: `${dir}/transcript.vtt`, open: async () => Buffer.from(formatTranscript('vtt', lines, meta)) };
    }
    for (const rec of await archive.meetingTakes(db, meetingId)) {
      const { chain } = await takeComposition(db, rec);
      if (!chain.length) continue; // stored no frame
      yield {
        path: `${dir}/audio/v${rec.audio_version}.${takeAudioExtension(rec)}`,
        open: async () => takeAudioStream(store, rec, chain),
        stored: true,
      };
    }
    const upload = await archive.uploadedAudioPath(db, meetingId);
    const object = upload && (await store.stat(upload));
    if (upload && object)
      yield {
        // An upload meeting has no takes: its one audio file is version 1.
        path: `${dir}/audio/v1.${uploadExtension(object.contentType)}`,
        open: () => store.read(upload) as Promise<import('node:stream').Readable>,
        stored: true,
      };
  }
}

/**
 * Builds one claimed export: streams the archive to exports/{user}/{id}/{attempt}.zip while
 * renewing the lease, then marks it ready. A lost lease (taken over, cancelled by DELETE /me)
 * stops the build and deletes what it wrote; an error fails the export when it would repeat
 * (a transcript too large) and otherwise leaves the lease to lapse for the next attempt.
 */
export const buildExport: Workflow<
  { e: AccountExport } & BuildOptions,
  'ready' | 'lost' | 'failed' | 'retry',
  ExportDeps
> = async (ctx, { e, signal, onFile }) => {
  const { store, config, log } = ctx.deps;
  const leaseSeconds = config.ACCOUNT_EXPORT_LEASE_SECONDS;
  const path = exportsRepo.archivePath(e);
  const abort = new AbortController();
  const lost = new Error('the export lease was lost');
  signal?.addEventListener('abort', () => abort.abort(signal.reason), { once: true });
  // Renewed at a third of the lease: two renewals may fail before it lapses.
  const renewing = setInterval(
    () => {
      ctx
        .run(renew, { e, leaseSeconds })
        .then((held) => held || abort.abort(lost))
        .catch(() => undefined);
    },
    (leaseSeconds * 1000) / 3,
  );
  try {
    const createdAt = new Date().toISOString();
    const entries = archiveEntries(ctx.deps, e.user_id);
    const tapped = (async function* () {
      for await (const entry of entries) {
        onFile?.(entry.path);
        yield entry;
      }
    })();
    const { byteCount } = await writeZip(
      store,
      path,
      tapped,
      (files) => ({
        path: 'manifest.json',
        body: json({ format: 1, user_id: e.user_id, created_at: createdAt, export_id: e.id, files }),
      }),
      abort.signal,
    );
    clearInterval(renewing);
    if (await ctx.run(ready, { e, path, bytes: byteCount })) return 'ready';
    await store.delete(path).catch(() => undefined);
    return 'lost';
  } catch (err) {
    clearInterval(renewing);
    await store.delete(path).catch(() => undefined);
    if (abort.signal.reason === lost) return 'lost';
    if (err instanceof DomainError) {
      await ctx.run(failed, { e, error: err.message });
      return 'failed';
    }
    log.warn({ err: String(err), export_id: e.id, attempt: e.attempts }, 'account export interrupted; retried');
    return 'retry';
  } finally {
    clearInterval(renewing);
  }
};

/** The sweep's part: fail exports abandoned too often, build due ones (one at a time), delete expired ones. */
export const runAccountExports: Workflow<
  { budgetMs?: number; batch?: number },
  { built: number; abandoned: number; expired: number },
  ExportDeps
> = async (ctx, opts) => {
  const { config, store, db } = ctx.deps;
  const abandoned = await ctx.run(abandon, undefined);
  let built = 0;
  // No new claim after the budget: the sweep function's timeout (300 s) must leave the last build time to finish.
  const deadline = Date.now() + (opts.budgetMs ?? 60_000);
  while (Date.now() < deadline) {
    const e = await ctx.run(claim, config.ACCOUNT_EXPORT_LEASE_SECONDS);
    if (!e) break;
    if ((await buildExport(ctx, { e })) === 'ready') built++;
  }
  let expired = 0;
  for (const e of await exportsRepo.expiredExports(db, config.ACCOUNT_EXPORT_RETENTION_HOURS, opts.batch ?? 100)) {
    await removeExportObjects(store, e.user_id, e.id);
    if (await ctx.run(forget, e.id)) expired++;
  }
  return { built, abandoned, expired };
};

/** Deletes every archive of an export (or of the user): each attempt's object. Idempotent. */
export async function removeExportObjects(store: ObjectStore, userId: string, exportId?: string): Promise<void> {
  const objects = await store.list(exportsRepo.exportPrefix(userId, exportId));
  await Promise.all(objects.map((o) => store.delete(o.name)));
}

/** Claims the next due export (tests and the bench drive a build themselves with it). */
export const claimNextExport = claim;
