// Development secrets generated on the first `npm start` into DATA_DIR (git-ignored), so the
// local stack works at once. Never used when the variables are set, nor outside development.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const NAMES = ['IDENTITY_SECRET_KEY', 'SERVICE_AUTH_TOKEN', 'AUDIO_URL_SIGNING_KEY'] as const;
export type DevSecrets = Record<(typeof NAMES)[number], string>;

export function devSecretsFile(dataDir: string) {
  return path.join(dataDir, 'dev-secrets.json');
}

export function loadOrCreateDevSecrets(dataDir: string): DevSecrets {
  const file = devSecretsFile(dataDir);
  const saved: Partial<DevSecrets> = existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : {};
  let changed = false;
  for (const name of NAMES) {
    if (!saved[name]) {
      saved[name] = randomBytes(32).toString('base64url'); // distinct, independent values
      changed = true;
    }
  }
  if (changed) {
    mkdirSync(dataDir, { recursive: true });
    writeFileSync(file, JSON.stringify(saved, null, 2), { mode: 0o600 });
  }
  return saved as DevSecrets;
}
