// The fault run's exporter kill: a user's account export is built by a sweep process of its own
// (exporter.ts), which is SIGKILLed mid-archive (its first audio read held by a storage stall,
// after the JSON files went in). Another sweep (this process) must take the export over once
// the killed one's lease lapses and end it `ready` within the bound, with a valid archive (every
// file's sha256 as the manifest says) and no object left of the killed attempt.
import { spawn } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { SERVICE } from '@mi/lib/domain/actor';
import { exportPrefix } from '@mi/lib/repositories/account-exports';
import { runAccountExports } from '@mi/lib/use-cases/account-exports';
import { runWorkflow } from '@mi/lib/use-cases/workflow';
import { killOnParentDeath, type Cluster } from './cluster';
import { sleep } from '../support/poll';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** The killed exporter's lease: the takeover waits this long. */
const LEASE_SECONDS = 3;
/** After the kill, the export is ready within the lease and this (the rebuild, on a loaded machine). */
const REBUILD_BOUND_MS = 60_000;

export interface ExportKillReport {
  export_id: string;
  files_before_kill: number;
  attempts: number;
  ready_after_kill_s: number;
  bound_s: number;
  archive_files: number;
  archive_bytes: number;
  /** Anything wrong: an empty list when the export survived the kill. */
  problems: string[];
}

export async function killExporterMidArchive(
  cluster: Cluster,
  user: string,
  log: (line: string) => void,
): Promise<ExportKillReport> {
  const { db, store } = cluster.rt;
  const token = await cluster.token(user);
  const res = await fetch(`${cluster.apiUrl}/me/exports`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'idempotency-key': randomUUID() },
  });
  if (res.status !== 202) throw new Error(`POST /me/exports answered ${res.status}: ${await res.text()}`);
  const exportId = ((await res.json()) as { id: string }).id;
  const row = async () =>
    (
      await db.query<{ status: string; attempts: number; user_id: string; storage_path: string | null }>(
        'fault.export',
        'SELECT status, attempts, user_id, storage_path FROM account_export WHERE id = $1',
        [exportId],
      )
    ).rows[0];

  // The first read of a take's audio hangs, so the kill lands mid-archive whatever the machine's speed.
  await cluster.gcsFault({ mode: 'stall', count: 1, stall_ms: 120_000, objectPrefix: 'recordings/' });
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/fault/exporter.ts'], {
    cwd: ROOT,
    env: {
      ...process.env,
      DATABASE_URL: cluster.config.DATABASE_URL,
      STORAGE_BUCKET: cluster.config.STORAGE_BUCKET,
      STORAGE_EMULATOR_HOST: cluster.config.STORAGE_EMULATOR_HOST,
      STORAGE_SIGNER_KEY_FILE: cluster.config.STORAGE_SIGNER_KEY_FILE,
      FAULT_EXPORT_LEASE_SECONDS: String(LEASE_SECONDS),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const watchdog = killOnParentDeath(child);
  const exited = new Promise<string | number | null>((resolve) =>
    child.once('exit', (code, sig) => resolve(sig ?? code)),
  );
  let out = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (out += c.toString()));
  const files = () => out.split('\n').filter((l) => l.startsWith('file '));
  const deadline = Date.now() + 60_000;
  while (!files().some((l) => l.includes('/audio/'))) {
    if (child.exitCode !== null || Date.now() > deadline)
      throw new Error(`the exporter reached no audio file (exit ${child.exitCode}):\n${out.slice(-4000)}`);
    await sleep(50);
  }
  child.kill('SIGKILL');
  const how = await exited;
  watchdog?.kill();
  const killedAt = Date.now();
  await cluster.clearGcsFaults();
  const filesBeforeKill = files().length;
  log(`exporter killed (${how}) after ${filesBeforeKill} files of export ${exportId}`);

  const problems: string[] = [];
  const killed = await row();
  if (killed.status !== 'running') problems.push(`after the kill the export was ${killed.status}, not running`);

  // The next sweeps: nothing to claim until the lease lapses, then a rebuild from the start.
  const bound = LEASE_SECONDS * 1000 + REBUILD_BOUND_MS;
  let ready = await row();
  while (ready.status !== 'ready' && Date.now() - killedAt < bound) {
    await runWorkflow(cluster.rt, SERVICE, runAccountExports, {});
    ready = await row();
    if (ready.status === 'failed') break;
    if (ready.status !== 'ready') await sleep(500);
  }
  const readyAfterMs = Date.now() - killedAt;
  const report: ExportKillReport = {
    export_id: exportId,
    files_before_kill: filesBeforeKill,
    attempts: ready.attempts,
    ready_after_kill_s: Math.round(readyAfterMs / 100) / 10,
    bound_s: bound / 1000,
    archive_files: 0,
    archive_bytes: 0,
    problems,
  };
  if (ready.status !== 'ready' || !ready.storage_path) {
    problems.push(`the export ended ${ready.status} ${readyAfterMs} ms after the kill (bound ${bound} ms)`);
    return report;
  }

  // The archive as a user checks it: unzip, every file's sha256 against the manifest.
  const dir = mkdtempSync(path.join(tmpdir(), 'fault-export-'));
  try {
    const zip = await store.readAll(ready.storage_path);
    report.archive_bytes = zip.length;
    writeFileSync(path.join(dir, 'export.zip'), zip);
    const unzip = spawnSync('unzip', ['-q', path.join(dir, 'export.zip'), '-d', path.join(dir, 'files')], {
      encoding: 'utf8',
    });
    if (unzip.status !== 0) problems.push(`unzip failed: ${unzip.stderr}`);
    else {
      const manifest = JSON.parse(readFileSync(path.join(dir, 'files', 'manifest.json'), 'utf8')) as {
        files: { path: string; sha256: string; bytes: number }[];
      };
      report.archive_files = manifest.files.length;
      for (const f of manifest.files) {
        const bytes = readFileSync(path.join(dir, 'files', f.path));
        if (createHash('sha256').update(bytes).digest('hex') !== f.sha256 || bytes.length !== f.bytes)
          problems.push(`${f.path} differs from the manifest`);
      }
      if (!manifest.files.some((f) => f.path.includes('/audio/'))) problems.push('the archive holds no audio');
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  // The killed attempt's upload was never finalized: only the ready archive is stored.
  const objects = (await store.list(exportPrefix(ready.user_id, exportId))).map((o) => o.name);
  if (objects.length !== 1 || objects[0] !== ready.storage_path)
    problems.push(`objects under the export: ${objects.join(', ')}`);
  return report;
}
