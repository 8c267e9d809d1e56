// What the redaction keeps: addresses are readable, their secrets (query strings, user info) are not.
import { describe, expect, it } from 'vitest';
import { createLogger } from './log';

function capture(fields: object): Record<string, unknown> {
  let out = '';
  createLogger({ level: 'info', destination: { write: (l: string) => void (out = l) } }).info(fields, 'm');
  return JSON.parse(out);
}

describe('log redaction', () => {
  it('should keep a plain URL whole and strip a signed URL to its address', () => {
    const signed = 'https://storage.googleapis.com/bucket/a.wav?X-Goog-Signature=abc123&X-Goog-Credential=x';
    const line = capture({ url: 'http://localhost:4002', ml: { url: 'http://127.0.0.1:4003/' }, proxy_url: signed });
    expect(line.url).toBe('http://localhost:4002');
    expect(line.ml).toEqual({ url: 'http://127.0.0.1:4003/' });
    expect(line.proxy_url).toBe('https://storage.googleapis.com/bucket/a.wav?[redacted]');
    expect(JSON.stringify(line)).not.toContain('abc123');
  });

  it('should redact user info in a URL and every token, whatever its value', () => {
    const line = capture({
      url: 'postgres://app:hunter2@db:5432/x',
      token: 'tok',
      headers: { authorization: 'Bearer z' },
    });
    expect(line.url).toBe('postgres://[redacted]@db:5432/x');
    expect(line.token).toBe('[redacted]');
    expect(line.headers).toEqual({ authorization: '[redacted]' });
  });

  it("should give every line a message: empty for fields alone, an error's own for an error alone", () => {
    let out = '';
    const log = createLogger({ level: 'info', destination: { write: (l: string) => void (out = l) } });
    log.info({ a: 1 });
    expect(JSON.parse(out)).toMatchObject({ severity: 'INFO', message: '', a: 1 });
    log.error(new Error('boom'));
    expect(JSON.parse(out)).toMatchObject({ severity: 'ERROR', message: 'boom' });
  });
});
