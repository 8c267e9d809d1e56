// `npm run ml:conformance -- --url <ML base URL> [options]`: runs the conformance kit against an ML
// service wired to a running core (`ML_SERVICE_URL=… npm start`). The core's credentials, bounds
// and emulator addresses come from the environment, else from the stack's .data/local-stack.env
// (docs/ml-integration.md). Exit code 1 when any check fails.
import { existsSync, readFileSync } from 'node:fs';
import { parseArgs, parseEnv } from 'node:util';
import { formatReport } from './report';
import { runConformance } from './run';
import { startWitness } from './witness';

const USAGE =
  'usage: npm run ml:conformance -- --url <ML base URL> [--core-url <core URL>] [--timeout <seconds>] ' +
  '[--start-timeout <seconds>] [--drain-timeout <seconds>] [--only live|batch] [--witness-port <port>]';

function fail(message: string): never {
  process.stderr.write(`${message}\n${USAGE}\n`);
  process.exit(2);
}

const { values } = parseArgs({
  options: {
    url: { type: 'string' },
    'core-url': { type: 'string' },
    timeout: { type: 'string', default: '30' },
    'start-timeout': { type: 'string' },
    'drain-timeout': { type: 'string' },
    only: { type: 'string' },
    'witness-port': { type: 'string' },
  },
});
if (!values.url) fail('--url is required');
const stackEnvFile = `${process.env.DATA_DIR ?? '.data'}/local-stack.env`;
const env = { ...(existsSync(stackEnvFile) ? parseEnv(readFileSync(stackEnvFile, 'utf8')) : {}), ...process.env };
const need = (name: string) =>
  env[name] || fail(`${name} is not set and not in ${stackEnvFile}: start the stack first (npm start)`);
/** Seconds given as a flag, else the core's variable, else its default: in milliseconds. */
const seconds = (flag: string, given: string | undefined, variable?: string, fallback?: number) => {
  const value = Number(given ?? (variable && env[variable]) ?? fallback);
  if (!(value > 0)) fail(`${flag} must be a positive number of seconds`);
  return value * 1000;
};
if (values.only !== undefined && values.only !== 'live' && values.only !== 'batch') fail('--only is live or batch');

const coreUrl = values['core-url'] ?? env.CORE_URL ?? `http://localhost:${env.CORE_PORT ?? 4002}`;
const witnessPort = values['witness-port'];
if (witnessPort !== undefined && !/^\d+$/.test(witnessPort)) fail('--witness-port must be a port number');
const witness = witnessPort === undefined ? undefined : await startWitness(coreUrl, Number(witnessPort));
if (witness) process.stderr.write(`the witness passes ${witness.url} through to ${coreUrl}\n`);

const checks = await runConformance({
  mlUrl: values.url,
  core: {
    url: coreUrl,
    serviceToken: need('SERVICE_AUTH_TOKEN'),
    identitySecret: need('IDENTITY_SECRET_KEY'),
    storageEmulator: need('STORAGE_EMULATOR_HOST'),
  },
  pubsub: {
    projectId: env.GOOGLE_CLOUD_PROJECT ?? 'local-project',
    emulatorHost: need('PUBSUB_EMULATOR_HOST'),
    topic: env.PUBSUB_TOPIC_RECORDING_FINALIZED ?? 'recording.finalized',
  },
  timeoutMs: seconds('--timeout', values.timeout),
  startTimeoutMs: seconds('--start-timeout', values['start-timeout'], 'RECORDING_ML_START_TIMEOUT_SECONDS', 10),
  drainTimeoutMs: seconds('--drain-timeout', values['drain-timeout'], 'RECORDING_ML_DRAIN_TIMEOUT_SECONDS', 5),
  only: values.only as 'live' | 'batch' | undefined,
  witness,
});
await witness?.close();
process.stdout.write(formatReport(checks));
process.exit(checks.every((c) => c.pass) ? 0 : 1);
