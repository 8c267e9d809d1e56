import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkWebhookUrl, isPublicAddress, type Resolve } from './address';
import { sendWebhook } from './send';

const SECRET = `whsec_${Buffer.alloc(32, 1).toString('base64')}`;
const resolvesTo =
  (...addresses: string[]): Resolve =>
  async () =>
    addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));

describe('webhook addresses', () => {
  it('should accept only public unicast addresses', () => {
    for (const a of ['8.8.8.8', '1.1.1.1', '2606:4700:4700::1111']) expect(isPublicAddress(a), a).toBe(true);
    const refused = [
      '127.0.0.1',
      '10.1.2.3',
      '172.16.0.1',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '255.255.255.255',
      '224.0.0.1',
      '::1',
      '::',
      'fe80::1',
      'fd00:ec2::254',
      '::ffff:10.0.0.1',
      '::ffff:127.0.0.1',
      'not-an-ip',
    ];
    for (const a of refused) expect(isPublicAddress(a), a).toBe(false);
  });

  it('should judge an IPv6 address that embeds an IPv4 address by the IPv4 address', () => {
    const judged: [string, boolean][] = [
      ['::7f00:1', false], // IPv4-compatible ::127.0.0.1
      ['::808:808', true], // ::8.8.8.8
      ['::a9fe:a9fe', false], // ::169.254.169.254
      ['::ffff:808:808', true], // mapped
      ['::ffff:0:a00:1', false], // translated ::ffff:0:10.0.0.1
      ['::ffff:0:808:808', true],
      ['2002:7f00:1::', false], // 6to4 of 127.0.0.1
      ['2002:a9fe:a9fe:1::1', false], // 6to4 of 169.254.169.254
      ['2002:808:808::1', true],
      ['64:ff9b::a00:1', false], // NAT64 of 10.0.0.1
      ['64:ff9b::a9fe:a9fe', false],
      ['64:ff9b::808:808', true],
      ['64:ff9b:1::808:808', false], // local-use NAT64: private networks
      ['2001:0:808:808::80ff:fffe', false], // Teredo, client 127.0.0.1 (inverted)
      ['2001:0:a00:1::f7f7:f7f7', false], // Teredo, server 10.0.0.1
      ['2001:0:808:808::f7f7:f7f7', true], // Teredo, server and client 8.8.8.8
    ];
    for (const [a, ok] of judged) expect(isPublicAddress(a), a).toBe(ok);
  });

  it('should refuse https://[::127.0.0.1]/ and hosts answering with an embedded private address', async () => {
    const refused: [string, Resolve][] = [
      ['https://[::127.0.0.1]/x', resolvesTo()],
      ['https://[::ffff:127.0.0.1]/x', resolvesTo()],
      ['https://[2002:7f00:1::]/x', resolvesTo()],
      ['https://[64:ff9b::169.254.169.254]/x', resolvesTo()],
      ['https://nat64.example.com/x', resolvesTo('64:ff9b::a00:5')],
      ['https://teredo.example.com/x', resolvesTo('2001:0:808:808::80ff:fffe')],
    ];
    for (const [url, resolve] of refused) {
      const err = await checkWebhookUrl(url, 'staging', resolve).then(
        () => null,
        (e) => e,
      );
      expect(err?.code, url).toBe('unprocessable');
    }
    await expect(checkWebhookUrl('https://[::8.8.8.8]/x', 'staging', resolvesTo())).resolves.toBeUndefined();
  });

  it('should refuse in production what is not https or resolves to a private, loopback, link-local or metadata address', async () => {
    await expect(
      checkWebhookUrl('https://hooks.example.com/x', 'production', resolvesTo('93.184.216.34')),
    ).resolves.toBeUndefined();
    const cases: [string, Resolve][] = [
      ['http://hooks.example.com/x', resolvesTo('93.184.216.34')],
      ['http://localhost:8080/x', resolvesTo('127.0.0.1')],
      ['https://localhost/x', resolvesTo('127.0.0.1')],
      ['https://metadata.google.internal/x', resolvesTo('169.254.169.254')],
      ['https://169.254.169.254/x', resolvesTo()],
      ['https://[::1]/x', resolvesTo()],
      ['https://internal.example.com/x', resolvesTo('93.184.216.34', '10.0.0.5')], // any private answer refuses
      ['https://nowhere.invalid/x', async () => Promise.reject(new Error('ENOTFOUND'))],
    ];
    for (const [url, resolve] of cases) {
      const err = await checkWebhookUrl(url, 'staging', resolve).then(
        () => null,
        (e) => e,
      );
      expect(err?.code, url).toBe('unprocessable');
      expect(err.errors[0].path).toBe('url');
    }
  });

  it('should refuse with 422 a host whose name resolution never answers, once the check times out', async () => {
    const never: Resolve = () => new Promise(() => undefined);
    const err = await checkWebhookUrl('https://silent-dns.example.com/x', 'staging', never, 100).then(
      () => null,
      (e) => e,
    );
    expect(err).toMatchObject({ code: 'unprocessable', errors: [{ path: 'url' }] });
    expect(err.message).toMatch(/did not resolve within 0\.1 s/);
  });

  it('should allow http only to localhost and 127.0.0.1 in development and test, without address checks', async () => {
    for (const env of ['development', 'test'] as const) {
      await expect(checkWebhookUrl('http://localhost:9/x', env)).resolves.toBeUndefined();
      await expect(checkWebhookUrl('http://127.0.0.1:9/x', env)).resolves.toBeUndefined();
      await expect(checkWebhookUrl('http://example.com/x', env)).rejects.toMatchObject({ code: 'unprocessable' });
    }
  });
});

describe('sending', () => {
  let server: Server;
  let hits = 0;
  let url = '';
  let answer: (res: import('node:http').ServerResponse) => void = (res) => res.writeHead(200).end();
  beforeAll(async () => {
    server = createServer((req, res) => {
      hits++;
      req.resume();
      answer(res);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  });
  afterAll(() => new Promise((r) => server.close(r)));

  it('should check the address again at delivery: a host rebound to a private address gets no request', async () => {
    hits = 0;
    const target = { url: 'https://rebinding.example.com/hook', secrets: [SECRET] };
    const result = await sendWebhook(
      target,
      { id: 'msg_1', body: '{}' },
      { env: 'production', resolve: resolvesTo('127.0.0.1') },
    );
    expect(result).toMatchObject({ status_code: null, error: expect.stringMatching(/resolves to 127\.0\.0\.1/) });
    const literal = await sendWebhook(
      { url: url.replace('http:', 'https:'), secrets: [SECRET] },
      { id: 'msg_2', body: '{}' },
      { env: 'production', resolve: resolvesTo() },
    );
    expect(literal.error).toMatch(/private, loopback/);
    expect(hits).toBe(0);
  });

  it('should count name resolution inside the attempt budget: a resolver that never answers times out', async () => {
    hits = 0;
    const never: Resolve = () => new Promise(() => undefined);
    const result = await sendWebhook(
      { url: 'https://silent-dns.example.com/hook', secrets: [SECRET] },
      { id: 'msg_dns', body: '{}' },
      { env: 'production', resolve: never, timeoutMs: 200 },
    );
    expect(result).toMatchObject({
      status_code: null,
      error: 'no answer within 0.2 s (resolving silent-dns.example.com)',
    });
    expect(result.duration_ms).toBeGreaterThanOrEqual(195);
    expect(hits).toBe(0);
  });

  it('should not follow redirects: a 3xx is the answer, and a failure', async () => {
    answer = (res) => res.writeHead(307, { location: 'http://169.254.169.254/' }).end();
    hits = 0;
    const result = await sendWebhook(
      { url, secrets: [SECRET] },
      { id: 'msg_3', body: '{}' },
      { env: 'test', resolve: resolvesTo() },
    );
    expect(result).toMatchObject({ status_code: 307, error: null });
    expect(hits).toBe(1);
  });

  it('should read at most 64 KiB of an endless answer', async () => {
    let written = 0;
    answer = (res) => {
      res.writeHead(200);
      const chunk = Buffer.alloc(16 * 1024, 97);
      const more = () => {
        while (!res.destroyed && res.write(chunk)) written += chunk.length;
        if (!res.destroyed) res.once('drain', more);
      };
      more();
    };
    const result = await sendWebhook(
      { url, secrets: [SECRET] },
      { id: 'msg_4', body: '{}' },
      { env: 'test', resolve: resolvesTo() },
    );
    expect(result).toMatchObject({ status_code: 200, error: null });
    expect(written).toBeLessThan(16 * 1024 * 1024);
  });
});
