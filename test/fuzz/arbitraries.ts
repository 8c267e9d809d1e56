// fast-check generators of hostile REST input: values that break types, sizes, encodings and
// nesting, malformed JSON texts, and bad headers. JSON cannot carry 1e400, NaN or -0, so such
// numbers travel as RAW placeholders that `serialize` writes verbatim into the body text.
import fc from 'fast-check';

const RAW = (token: string) => `@@RAW:${token}@@`;

/** JSON text of a value, with RAW placeholders written as bare tokens. */
export function serialize(value: unknown): string {
  return JSON.stringify(value).replace(/"@@RAW:((?:[^"\\]|\\.)*)@@"/g, (_, inner: string) => JSON.parse(`"${inner}"`));
}

/** Deep nesting as text (building it as objects would overflow JSON.stringify's stack here). */
const nest = (depth: number): string => {
  let open = '';
  let close = '';
  for (let i = 0; i < depth; i++) {
    open += i % 2 ? '{"a":' : '[';
    close = (i % 2 ? '}' : ']') + close;
  }
  return RAW(`${open}1${close}`);
};

const vector = (n: number, fill: unknown = 0.5) => Array.from({ length: n }, () => fill);
const withOne = (bad: unknown) => Object.assign(vector(192), { 97: bad });

export const printable = (maxLength = 40) =>
  fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength });

/** Values that are wrong somewhere: type, range, encoding, size, depth, shape. */
export const nastyValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom<unknown>(
    null,
    true,
    false,
    0,
    -1,
    2 ** 31,
    2 ** 53 + 2,
    -1e308,
    5e-324,
    '',
    ' ',
    'null',
    'NaN',
    '\u0000',
    'a\u0000b',
    '\ud800',
    'x\udfffy',
    '\u202e\ufeff',
    '😀'.repeat(20),
    'not-a-uuid',
    '00000000-0000-0000-0000-000000000000',
    '7B0A3C52-1F0E-4F6E-9D53-0C6A1D1F2B7E ',
    '2026-13-45T99:99:99Z',
    '0000-00-00',
    '+275760-09-13T00:00:00.000Z',
    '-271821-04-20T00:00:00.000Z',
    '2026-02-30',
    "'; DROP TABLE meeting; --",
    '%s%n%x',
    '../../etc/passwd',
    '<script>alert(1)</script>',
    {},
    [],
    [null],
    JSON.parse('{"__proto__":{"admin":true}}'),
    { constructor: { prototype: { polluted: 1 } } },
    RAW('1e400'),
    RAW('-1e400'),
    RAW('1e-400'),
    RAW('-0'),
    RAW('123456789012345678901234567890'),
    RAW('0.1e999999'),
  ),
  fc.uuid(),
  fc.integer(),
  fc.double().map((d) => (Number.isFinite(d) ? d : RAW(String(d) === 'NaN' ? '1e400' : d > 0 ? '1e400' : '-1e400'))),
  fc.string({ maxLength: 60 }),
  fc.string({ unit: 'binary', maxLength: 60 }),
  fc.constantFrom(1_001, 10_001, 100_001, 200_000, 400_000).map((n) => 'x'.repeat(n)),
  fc.integer({ min: 2, max: 20_000 }).map((d) => nest(d)),
  fc.constantFrom<unknown>(
    vector(0),
    vector(1),
    vector(191),
    vector(193),
    vector(192, 0),
    vector(192, 1e38),
    vector(192, 1e39),
    vector(192, 1e-50),
    vector(192, 'x'),
    vector(192, null),
    withOne(RAW('1e400')),
    withOne(RAW('-1e400')),
    withOne('NaN'),
    withOne(null),
    withOne([]),
    vector(10_000),
  ),
  fc.jsonValue({ maxDepth: 3 }),
);

/** Body texts that are not (acceptable) JSON, built from a valid body's text. */
export const malformedBody = (valid: string): fc.Arbitrary<string | Uint8Array> =>
  fc.oneof(
    fc.nat({ max: Math.max(0, valid.length - 1) }).map((n) => valid.slice(0, n)),
    fc.constantFrom<string | Uint8Array>(
      '',
      ' ',
      'null',
      '[]',
      '"text"',
      '{',
      '}',
      '{"a":1,}',
      '{a:1}',
      "{'a':1}",
      'NaN',
      'undefined',
      `\ufeff${valid}`,
      valid.replace(/:\s*(-?\d+(\.\d+)?)/, ':1e400'),
      valid.replace(/^\{/, '{"x":1,"x":2,'),
      valid + valid,
      `${valid}\u0000`,
      '['.repeat(100_000) + ']'.repeat(100_000),
      `${'{"a":'.repeat(50_000)}1${'}'.repeat(50_000)}`,
      `"${'x'.repeat(1000)}`,
      Buffer.from([0xff, 0xfe, 0x7b, 0x7d]),
      Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xc3, 0x28, 0x22, 0x7d]),
    ),
    printable(80),
  );

export const badContentType = fc.oneof(
  fc.constantFrom(
    'text/plain',
    'application/xml',
    'multipart/form-data; boundary=x',
    'application/x-www-form-urlencoded',
    'application/json; charset=utf-16',
    'application/merge-patch+json',
    'application/jsonx',
    'audio/wav',
    'application/octet-stream',
    '*/*',
    'application/json;;;',
    'APPLICATION/JSON',
    'json',
    ' application/json',
  ),
  printable(30),
);

export const badId = (fixtureIds: string[]) =>
  fc.oneof(
    fc.constantFrom(
      'not-a-uuid',
      '',
      '0',
      '00000000-0000-0000-0000-000000000000',
      '%00',
      '..%2F..',
      '😀',
      'a'.repeat(5_000),
      "1' OR '1'='1",
      'null',
      '-1',
    ),
    fc.uuid(),
    fc.constantFrom(...fixtureIds), // a record of the wrong kind for this parameter
    fc.constantFrom(...fixtureIds).map((id) => id.toUpperCase()),
  );

export const badQueryValue = fc.oneof(
  fc.constantFrom(
    '-1',
    '0',
    '201',
    '1e400',
    'NaN',
    'abc',
    '',
    ' ',
    '1.5',
    '0x10',
    '99999999999999999999',
    'x'.repeat(10_000),
    'ASC',
    'both',
    'system,user',
  ),
  fc.constantFrom(
    'bm90IGEgY3Vyc29y',
    'eyJ0IjoiIiwiaWQiOiIifQ',
    'eyJ0IjoiMjAyNi0xMy00NSIsImlkIjoieCJ9',
    '%%%',
    '__proto__',
  ),
  printable(60),
);

export const FIXED_IDEMPOTENCY_KEYS = ['3f0a1c52-1f0e-4f6e-9d53-0c6a1d1f2b70', '3f0a1c52-1f0e-4f6e-9d53-0c6a1d1f2b71'];

export const badHeader = fc.oneof(
  fc.record({
    name: fc.constant('idempotency-key'),
    value: fc.oneof(
      fc.constantFrom(
        '',
        'not-a-uuid',
        'x'.repeat(5_000),
        ' 3f0a1c52-1f0e-4f6e-9d53-0c6a1d1f2b70',
        '3F0A1C52-1F0E-4F6E-9D53-0C6A1D1F2B70',
        ...FIXED_IDEMPOTENCY_KEYS,
      ),
      printable(60),
    ),
  }),
  fc.record({ name: fc.constant('idempotency-key'), value: fc.constant(undefined) }),
  fc.record({
    name: fc.constant('content-digest'),
    value: fc.oneof(
      fc.constantFrom(
        'sha-256=:AAAA:',
        'sha-256=:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=:',
        'garbage',
        'md5=:x:',
        'sha-256=',
        ':::',
      ),
      printable(60),
    ),
  }),
  fc.record({
    name: fc.constant('x-client-id'),
    value: fc.oneof(fc.constantFrom('not-a-uuid', '', 'x'.repeat(5_000)), printable(40)),
  }),
  fc.record({
    name: fc.constantFrom('traceparent', 'tracestate'),
    value: fc.oneof(
      fc.constantFrom(
        '00-zz-zz-01',
        '00-00000000000000000000000000000000-0000000000000000-01',
        `ff-${'a'.repeat(500)}`,
      ),
      printable(60),
    ),
  }),
  fc.record({
    name: fc.constant('authorization'),
    value: fc.oneof(
      fc.constantFrom(
        'Bearer',
        'Bearer  ',
        'bearer x.y.z',
        'Bearer a.b.c.d',
        `Bearer ${'x'.repeat(10_000)}`,
        'Basic Og==',
      ),
      printable(80),
    ),
  }),
  fc.record({
    name: fc.constantFrom('accept', 'accept-encoding', 'range', 'if-match', 'x-http-method-override'),
    value: printable(60),
  }),
);
