// Deterministic "model output" of the fake ML service: the same audio (sequence numbers) always
// gives the same segments, speakers, feature vectors, insights and idempotency keys, so tests
// can assert on them.
import { createHash } from 'node:crypto';

/** Frames per live segment: 2 s of 100 ms frames. */
export const WINDOW_FRAMES = 20;
export const FRAME_MS = 100;
export const FEATURE_DIMENSIONS = 192;

const PHRASES = [
  'Good morning everyone, let us get started.',
  'The first item on the agenda is the quarterly budget.',
  'We are slightly ahead of plan on revenue.',
  'Costs for the new office came in higher than expected.',
  'I suggest we review the vendor contracts next week.',
  'Marketing wants to move the launch to early May.',
  'That depends on the testing schedule.',
  'QA needs two more weeks for the mobile release.',
  'Can we get a status update on hiring?',
  'Two engineers start on Monday.',
  'We still need a designer for the onboarding flow.',
  'Let us make sure the customer feedback is triaged.',
];

/** The speaker of a live window: two speakers taking turns. */
export const speakerOf = (window: number) => `SPEAKER_${window % 2}`;
export const phraseOf = (window: number) => PHRASES[window % PHRASES.length];

/** Window (live segment index) of a frame sequence number. */
export const windowOf = (sequence: number) => Math.floor(sequence / WINDOW_FRAMES);

function seededRandom(seed: string): () => number {
  const h = createHash('sha256').update(seed).digest();
  let state = h.readUInt32BE(0) || 1;
  // mulberry32
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const normalise = (v: number[]) => {
  const norm = Math.hypot(...v) || 1;
  return v.map((x) => Number((x / norm).toFixed(6)));
};

/**
 * A unit 192-dim voice embedding: a base direction per speaker label plus a small per-segment
 * wobble, so segments of one speaker have cosine similarity near 1 and different speakers near 0.
 */
export function featureVector(label: string, variant: number): number[] {
  const base = seededRandom(`voice:${label}`);
  const wobble = seededRandom(`voice:${label}:${variant}`);
  return normalise(Array.from({ length: FEATURE_DIMENSIONS }, () => base() - 0.5 + (wobble() - 0.5) * 0.05));
}

/** A stable uuid (version 5 layout) of the parts: idempotency keys that survive retries and resumes. */
export function stableUuid(...parts: (string | number)[]): string {
  const h = createHash('sha256').update(parts.join('\u0000')).digest();
  h[6] = (h[6] & 0x0f) | 0x50;
  h[8] = (h[8] & 0x3f) | 0x80;
  const x = h.subarray(0, 16).toString('hex');
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`;
}

/** Root mean square of little-endian 16-bit samples (scale 0-32767). */
export function rmsPcm16(bytes: Buffer): number {
  const samples = Math.floor(bytes.length / 2);
  if (samples === 0) return 0;
  let sum = 0;
  for (let i = 0; i < samples; i++) {
    const s = bytes.readInt16LE(i * 2);
    sum += s * s;
  }
  return Math.sqrt(sum / samples);
}

// No number in the text: the window index it would carry is no count of talking points (the first
// one of a take read "Talking point 3"); a client numbers them in order.
export const talkingPointText = (texts: string[]) => `Discussed: ${texts.join(' ')}`.slice(0, 2000);
export const taskText = (text: string) => `Follow up: ${text}`.slice(0, 2000);
