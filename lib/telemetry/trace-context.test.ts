import { describe, expect, it } from 'vitest';
import { validTraceContext, validTraceparent, validTracestate } from './trace-context';

const TP = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

describe('validTraceparent', () => {
  it('should accept the W3C form and refuse anything else', () => {
    expect(validTraceparent(TP)).toBe(true);
    expect(validTraceparent('01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00')).toBe(true); // a later version, four fields
    for (const bad of [
      `00-${'0'.repeat(32)}-00f067aa0ba902b7-01`, // zero trace id
      `00-4bf92f3577b34da6a3ce929d0e0e4736-${'0'.repeat(16)}-01`, // zero parent id
      'ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', // version ff
      TP.toUpperCase(),
      `${TP}\r\nx: 1`,
      `${TP}, ${TP}`, // two headers joined
      'not-a-trace',
      42,
      undefined,
    ])
      expect(validTraceparent(bad), String(bad)).toBe(false);
  });
});

describe('validTracestate', () => {
  it('should keep lists by the grammar, without empty members and optional whitespace', () => {
    expect(validTracestate('vendor=1')).toBe('vendor=1');
    expect(validTracestate('rojo=00f067aa0ba902b7, congo=t61rcWkgMzE ,, tenant@sys=a b ')).toBe(
      'rojo=00f067aa0ba902b7,congo=t61rcWkgMzE,tenant@sys=a b',
    );
    expect(validTracestate(Array.from({ length: 32 }, (_, i) => `k${i}=v`).join(','))).not.toBeNull();
    expect(validTracestate(`k=${'v'.repeat(256)}`)).not.toBeNull();
  });

  it('should drop the whole header when any part is outside it', () => {
    for (const bad of [
      'vendor=1\r\nx-injected: 1',
      'vendor=café',
      'vendor=1,Upper=2',
      'vendor=',
      'vendor=a=b',
      'vendor=1,vendor=2', // duplicate key
      `k=${'v'.repeat(257)}`,
      `${'k'.repeat(257)}=v`,
      Array.from({ length: 33 }, (_, i) => `k${i}=v`).join(','),
      `a=${'v'.repeat(100)},b=${'v'.repeat(100)},c=${'v'.repeat(100)},d=${'v'.repeat(100)},e=${'v'.repeat(100)}`, // 514 chars
      ' , ',
      {},
    ])
      expect(validTracestate(bad), String(bad)).toBeNull();
  });
});

describe('validTraceContext', () => {
  it('should keep a valid traceparent, drop an invalid tracestate alone, and drop both without a valid traceparent', () => {
    expect(validTraceContext({ traceparent: TP, tracestate: 'vendor=1' })).toEqual({
      traceparent: TP,
      tracestate: 'vendor=1',
    });
    expect(validTraceContext({ traceparent: TP, tracestate: 'vendor=\u20ac' })).toEqual({ traceparent: TP });
    expect(validTraceContext({ traceparent: 'nope', tracestate: 'vendor=1' })).toBeNull();
    expect(validTraceContext(null)).toBeNull();
  });
});
