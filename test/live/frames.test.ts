// The frame buffer's promise: whatever order and repetition frames arrive in, the runs it hands
// out for writing are contiguous, never overlap each other or what is stored, and together with
// what is stored cover every frame that arrived.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FrameBuffer } from '@mi/live/frames';

describe('FrameBuffer', () => {
  it('should write full runs at once and shorter ones when old enough or forced', () => {
    const buf = new FrameBuffer();
    for (const seq of [0, 1, 2, 3, 4, 5, 7]) buf.add(seq, Buffer.from([seq]), 1000);
    const due = (now: number, force = false) =>
      buf.dueRuns({ now, targetFrames: 3, maxFrames: 3, maxAgeMs: 500, force }).map((r) => [r.start, r.end]);
    expect(due(1100)).toEqual([
      [0, 2],
      [3, 5],
    ]);
    expect(due(1500)).toEqual([
      [0, 2],
      [3, 5],
      [7, 7],
    ]);
    buf.markDurable(0, 5);
    expect(due(1100, true)).toEqual([[7, 7]]);
    expect(buf.add(3, Buffer.from([3]), 2000)).toBe(false); // already stored
    expect(buf.add(7, Buffer.from([7]), 2000)).toBe(false); // already waiting
  });

  it('should write a backlog in objects of up to maxFrames, and a run shorter than the target only once old enough', () => {
    const buf = new FrameBuffer();
    for (let seq = 0; seq < 23; seq++) buf.add(seq, Buffer.from([seq]), 1000);
    const due = (now: number) =>
      buf.dueRuns({ now, targetFrames: 3, maxFrames: 10, maxAgeMs: 500, force: false }).map((r) => [r.start, r.end]);
    expect(due(1100)).toEqual([
      [0, 9],
      [10, 19],
      [20, 22],
    ]);
    buf.add(23, Buffer.from([23]), 1000);
    buf.markDurable(0, 19);
    buf.add(24, Buffer.from([24]), 1400);
    expect(due(1100)).toEqual([[20, 24]]);
    buf.markDurable(20, 23);
    expect(due(1500)).toEqual([]); // frame 24 alone: not full, not old enough yet
    expect(due(1900)).toEqual([[24, 24]]);
  });

  it('should hand out non-overlapping runs that, with what is stored, cover every frame once', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 60 }), { minLength: 1, maxLength: 200 }),
        fc.integer({ min: 1, max: 8 }),
        fc.integer({ min: 1, max: 4 }),
        fc.array(fc.tuple(fc.integer({ min: 0, max: 60 }), fc.integer({ min: 0, max: 5 })), { maxLength: 4 }),
        (arrivals, target, backlogFactor, storedElsewhere) => {
          const buf = new FrameBuffer();
          const written: [number, number][] = [];
          let now = 0;
          for (const [i, seq] of arrivals.entries()) {
            buf.add(seq, Buffer.from([seq]), now++);
            // Now and then: someone else stores a range, or we write what is due.
            const other = storedElsewhere[i % 7];
            if (i % 7 === 3 && other) buf.markDurable(other[0], other[0] + other[1]);
            if (i % 5 === 4) {
              for (const run of buf.dueRuns({
                now,
                targetFrames: target,
                maxFrames: target * backlogFactor,
                maxAgeMs: 10,
                force: false,
              })) {
                expect(run.frames.map((f) => f.seq)).toEqual(
                  Array.from({ length: run.end - run.start + 1 }, (_, k) => run.start + k),
                );
                for (let s = run.start; s <= run.end; s++) expect(buf.durable.has(s)).toBe(false);
                written.push([run.start, run.end]);
                buf.markDurable(run.start, run.end);
              }
            }
          }
          for (const run of buf.dueRuns({
            now,
            targetFrames: target,
            maxFrames: target * backlogFactor,
            maxAgeMs: 10,
            force: true,
          })) {
            written.push([run.start, run.end]);
            buf.markDurable(run.start, run.end);
          }
          const covered = written.flatMap(([s, e]) => Array.from({ length: e - s + 1 }, (_, k) => s + k));
          expect(new Set(covered).size).toBe(covered.length); // no frame written twice
          for (const seq of arrivals) expect(buf.durable.has(seq)).toBe(true);
          expect(buf.size).toBe(0);
          expect(buf.bytes).toBe(0);
        },
      ),
    );
  });
});
