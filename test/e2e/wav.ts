// A speech-like test signal as a 16 kHz mono 16-bit WAV, made in code so the browser test
// needs no speech synthesizer: voiced "syllables" (a 110-190 Hz fundamental with decaying
// harmonics under a Hann envelope) separated by short pauses, over a faint noise floor.
const RATE = 16_000;

export function speechLikeWav(seconds: number): Buffer {
  const n = Math.round(seconds * RATE);
  const pcm = Buffer.alloc(n * 2);
  let seed = 12345;
  const noise = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff - 0.5) * 2;
  const syllable = 0.26;
  const pause = 0.06;
  for (let i = 0; i < n; i++) {
    const t = i / RATE;
    const k = Math.floor(t / (syllable + pause));
    const within = t - k * (syllable + pause);
    let v = noise() * 0.01;
    if (within < syllable) {
      const f0 = 110 + ((k * 37) % 80);
      const env = Math.sin((Math.PI * within) / syllable) ** 2;
      for (let h = 1; h <= 6; h++) v += (env * 0.5 * Math.sin(2 * Math.PI * f0 * h * t)) / h ** 1.3;
    }
    pcm.writeInt16LE(Math.max(-32768, Math.min(32767, Math.round(v * 0.6 * 32767))), i * 2);
  }
  return Buffer.concat([wavHeader(pcm.length), pcm]);
}

function wavHeader(dataBytes: number): Buffer {
  const h = Buffer.alloc(44);
  h.write('RIFF', 0);
  h.writeUInt32LE(36 + dataBytes, 4);
  h.write('WAVE', 8);
  h.write('fmt ', 12);
  h.writeUInt32LE(16, 16); // PCM fmt chunk size
  h.writeUInt16LE(1, 20); // PCM
  h.writeUInt16LE(1, 22); // mono
  h.writeUInt32LE(RATE, 24);
  h.writeUInt32LE(RATE * 2, 28); // byte rate
  h.writeUInt16LE(2, 32); // block align
  h.writeUInt16LE(16, 34); // bits per sample
  h.write('data', 36);
  h.writeUInt32LE(dataBytes, 40);
  return h;
}
