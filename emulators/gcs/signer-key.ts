// The local signing identity: an RSA service-account-like key the storage client signs
// URLs with and the emulator verifies them against. Kept in a file so that the local
// stack signs with the same key across restarts.
import { createPublicKey, generateKeyPairSync } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

export interface SignerKey {
  client_email: string;
  private_key: string;
  public_key_pem: string;
}

export const LOCAL_SIGNER_EMAIL = 'local-signer@local-project.iam.gserviceaccount.com';

export function loadOrCreateSignerKey(file?: string): SignerKey {
  if (file && existsSync(file)) {
    const saved = JSON.parse(readFileSync(file, 'utf8')) as Partial<SignerKey>;
    if (!saved.client_email || !saved.private_key) throw new Error(`${file} lacks client_email or private_key`);
    const public_key_pem = createPublicKey(saved.private_key).export({ type: 'spki', format: 'pem' }).toString();
    return { client_email: saved.client_email, private_key: saved.private_key, public_key_pem };
  }
  const { privateKey, publicKey } = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    publicKeyEncoding: { type: 'spki', format: 'pem' },
  });
  const key: SignerKey = { client_email: LOCAL_SIGNER_EMAIL, private_key: privateKey, public_key_pem: publicKey };
  if (file) {
    mkdirSync(dirname(file), { recursive: true });
    // "type" makes the file usable as a service-account key file as well.
    writeFileSync(file, JSON.stringify({ type: 'service_account', ...key }, null, 2), { mode: 0o600 });
  }
  return key;
}
