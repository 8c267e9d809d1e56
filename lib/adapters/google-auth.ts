// How our Google Cloud clients get credentials without google-auth-library's deprecated
// `credentials` option (it prints a deprecation warning in every process that uses it).
import { type CredentialBody, GoogleAuth, JWT } from 'google-auth-library';

const SCOPES = ['https://www.googleapis.com/auth/cloud-platform'];

/**
 * A service account key (the local signer key) as the storage client's auth. GoogleAuth signs with
 * the key of a JWT client, but answers getCredentials (the signer asks it for the client_email)
 * only for JSON given through the deprecated option, so this one answers it from the key.
 */
class ServiceAccountKeyAuth extends GoogleAuth {
  constructor(private readonly jwt: JWT) {
    super({ authClient: jwt, scopes: SCOPES });
  }
  override getCredentials(): Promise<CredentialBody>;
  override getCredentials(callback: (err: Error | null, credentials?: CredentialBody) => void): void;
  override getCredentials(callback?: (err: Error | null, credentials?: CredentialBody) => void) {
    const credentials = this.jwt.getCredentials();
    if (!callback) return credentials;
    credentials.then((c) => callback(null, c), callback);
  }
}

export const serviceAccountAuth = (key: { client_email: string; private_key: string }): GoogleAuth =>
  new ServiceAccountKeyAuth(new JWT({ email: key.client_email, key: key.private_key, scopes: SCOPES }));

/**
 * For the emulators, which ignore credentials: a client that is never asked for a token (emulator
 * mode uses insecure channels), given so the library does not probe for GCE metadata.
 */
export const emulatorAuth = (): JWT => new JWT({ email: 'emulator@localhost', key: 'unused' });
