// The fault run's exporter: a sweep process that claims the next due account export and builds
// it with the sweep's builder, printing `file <path>` as each file goes into the archive, so the
// run can SIGKILL it mid-archive (export-kill.ts). Its lease is FAULT_EXPORT_LEASE_SECONDS.
import { createObjectStore } from '@mi/lib/adapters/storage';
import { createDatabase } from '@mi/lib/db/pool';
import { SERVICE } from '@mi/lib/domain/actor';
import { createLogger } from '@mi/lib/telemetry/log';
import { buildExport, claimNextExport, type ExportDeps } from '@mi/lib/use-cases/account-exports';
import { runUseCase } from '@mi/lib/use-cases/use-case';
import { runWorkflow } from '@mi/lib/use-cases/workflow';

const env = (name: string) => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is required`);
  return v;
};
const lease = Number(env('FAULT_EXPORT_LEASE_SECONDS'));
const db = createDatabase(env('DATABASE_URL'), { max: 2 });
const deps: ExportDeps = {
  db,
  store: createObjectStore({
    bucket: env('STORAGE_BUCKET'),
    emulatorHost: env('STORAGE_EMULATOR_HOST'),
    signerKeyFile: env('STORAGE_SIGNER_KEY_FILE'),
  }),
  log: createLogger({ level: 'warn', name: 'fault-exporter' }),
  // Its events stay in the outbox (the sweep's republish sends them).
  events: { publish: async () => undefined },
  config: { ACCOUNT_EXPORT_LEASE_SECONDS: lease, ACCOUNT_EXPORT_RETENTION_HOURS: 72 },
};
const e = await runUseCase(deps, SERVICE, claimNextExport, lease);
if (!e) throw new Error('no export to build');
console.log(`claimed ${e.id}`);
const outcome = await runWorkflow(deps, SERVICE, buildExport, { e, onFile: (path) => console.log(`file ${path}`) });
console.log(`outcome ${outcome}`);
await db.close();
