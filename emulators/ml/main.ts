// `tsx emulators/ml/main.ts`: the fake ML service on ML_PORT, calling the core at
// CORE_URL (default http://localhost:CORE_PORT) with SERVICE_AUTH_TOKEN.
import { loadConfig } from '@mi/lib/config';
import { startFakeMl } from './server';

const config = loadConfig(process.env);
const coreUrl = process.env.CORE_URL ?? `http://localhost:${config.CORE_PORT}`;
const ml = await startFakeMl({
  coreUrl,
  serviceToken: config.SERVICE_AUTH_TOKEN,
  config,
  host: process.env.ML_HOST ?? '127.0.0.1',
});
process.stdout.write(`${JSON.stringify({ msg: 'fake ML service ready', url: ml.url, core: coreUrl })}\n`);

let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  await ml.stop();
  process.exit(0);
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
