// The text rewrite of UTC timestamptz values (lib/db/pool.ts): the ISO string of the instant the
// server printed (through Date, truncated to milliseconds), for every value in every form.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isoOfTimestamptz } from './pool';

const two = (n: number) => String(n).padStart(2, '0');

describe('isoOfTimestamptz', () => {
  it("should give Date's ISO string of the instant for every UTC value the server prints", () => {
    const printed = fc
      .record({
        ms: fc.integer({ min: Date.UTC(1000, 0, 1), max: Date.UTC(9999, 11, 31) }),
        micros: fc.integer({ min: 0, max: 999_999 }),
        digits: fc.integer({ min: 0, max: 6 }),
      })
      .map(({ ms, micros, digits }) => {
        const d = new Date(ms);
        const date = `${d.getUTCFullYear()}-${two(d.getUTCMonth() + 1)}-${two(d.getUTCDate())}`;
        const time = `${two(d.getUTCHours())}:${two(d.getUTCMinutes())}:${two(d.getUTCSeconds())}`;
        const fraction = String(micros).padStart(6, '0').slice(0, digits);
        const instant = Math.floor(ms / 1000) * 1000 + Number(fraction.padEnd(3, '0').slice(0, 3));
        return { printed: `${date} ${time}${digits ? `.${fraction}` : ''}+00`, iso: new Date(instant).toISOString() };
      });
    fc.assert(
      fc.property(printed, ({ printed, iso }) => {
        expect(isoOfTimestamptz(printed)).toBe(iso);
      }),
      { numRuns: 2000 },
    );
  });

  it.each([
    ['2026-11-25 23:00:00+00', '2026-11-25T23:00:00.000Z'],
    ['2026-11-25 23:00:00.5+00', '2026-11-25T23:00:00.500Z'],
    ['2026-11-25 23:00:00.123456+00', '2026-11-25T23:00:00.123Z'],
    // Other forms go through pg's parser.
    ['2026-11-25 23:00:00.25+02', '2026-11-25T21:00:00.250Z'],
    ['2026-11-25 23:00:00+05:30', '2026-11-25T17:30:00.000Z'],
  ])('should read %s as %s', (v, iso) => {
    expect(isoOfTimestamptz(v)).toBe(iso);
  });
});
