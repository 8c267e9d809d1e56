// `npm run ml:conformance -- --url <ML base URL> [--core-url <core URL>] [--timeout <seconds>]`:
// runs the conformance kit against an ML service wired to a running core (`ML_SERVICE_URL=… npm
// start`). The core's credentials and emulator addresses come from the environment, else from the
// stack's .data/local-stack.env (docs/ml-integration.md). Exit code 1 when any check fails.
import { existsSync, readFileSync } from 'node:fs';
import { parseArgs, parseEnv } from 'node:util';
import { formatReport } from './report';
import { runConformance } from './run';

const USAGE = 'usage: npm run ml:conformance -- --url <ML base URL> [--core-url <core URL>] [--timeout <seconds>]';

function fail(message: string): never {
  process.stderr.write(`${message}\n${USAGE}\n`);
  process.exit(2);
}

const { values } = parseArgs({
  options: { url: { type: 'string' }, 'core-url': { type: 'string' }, timeout: { type: 'string', default: '30' } },
});
if (!values.url) fail('--url is required');
const stackEnvFile = `${process.env.DATA_DIR ?? '.data'}/local-stack.env`;
const env = { ...(existsSync(stackEnvFile) ? parseEnv(readFileSync(stackEnvFile, 'utf8')) : {}), ...process.env };
const need = (name: string) =>
  env[name] || fail(`${name} is not set and not in ${stackEnvFile}: start the stack first (npm start)`);
const timeout = Number(values.timeout);
if (!(timeout > 0)) fail('--timeout must be a positive number of seconds');

const checks = await runConformance({
  mlUrl: values.url,
  core: {
    url: values['core-url'] ?? env.CORE_URL ?? `http://localhost:${env.CORE_PORT ?? 4002}`,
    serviceToken: need('SERVICE_AUTH_TOKEN'),
    identitySecret: need('IDENTITY_SECRET_KEY'),
    storageEmulator: need('STORAGE_EMULATOR_HOST'),
  },
  pubsub: {
    projectId: env.GOOGLE_CLOUD_PROJECT ?? 'local-project',
    emulatorHost: need('PUBSUB_EMULATOR_HOST'),
    topic: env.PUBSUB_TOPIC_RECORDING_FINALIZED ?? 'recording.finalized',
  },
  timeoutMs: timeout * 1000,
});
process.stdout.write(formatReport(checks));
process.exit(checks.every((c) => c.pass) ? 0 : 1);
