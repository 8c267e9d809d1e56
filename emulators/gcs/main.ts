// CLI: tsx emulators/gcs/main.ts --port 4443 --data-dir .data/gcs --signer-key-file .data/gcs-signer.json
import { parseArgs } from 'node:util';
import { startGcsEmulator } from './server';
import { loadOrCreateSignerKey } from './signer-key';

const { values } = parseArgs({
  options: {
    port: { type: 'string', default: '4443' },
    host: { type: 'string', default: '127.0.0.1' },
    'data-dir': { type: 'string' },
    'signer-key-file': { type: 'string' },
  },
});

const port = Number(values.port);
if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`--port must be 0..65535, not ${values.port}`);
const signer = values['signer-key-file'] ? loadOrCreateSignerKey(values['signer-key-file']) : undefined;
const emulator = await startGcsEmulator({
  port,
  host: values.host,
  dataDir: values['data-dir'],
  trustedKeys: signer ? [signer] : [],
});
console.log(
  `GCS emulator on ${emulator.url}${values['data-dir'] ? ` (data in ${values['data-dir']})` : ' (in memory)'}`,
);
if (signer) console.log(`Signed URLs by ${signer.client_email} (key in ${values['signer-key-file']}) are accepted`);

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => void emulator.stop().finally(() => process.exit(0)));
}
