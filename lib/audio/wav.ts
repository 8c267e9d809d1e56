// The 44-byte RIFF/WAVE header of linear PCM, written in front of a recording's raw frames.
const MAX_U32 = 0xffffffff;

export const WAV_HEADER_BYTES = 44;

export function wavHeader(dataBytes: number, sampleRate: number, channels = 1, bitsPerSample = 16): Buffer {
  const h = Buffer.alloc(WAV_HEADER_BYTES);
  const blockAlign = (channels * bitsPerSample) / 8;
  h.write('RIFF', 0, 'ascii');
  h.writeUInt32LE(Math.min(MAX_U32, 36 + dataBytes), 4);
  h.write('WAVE', 8, 'ascii');
  h.write('fmt ', 12, 'ascii');
  h.writeUInt32LE(16, 16); // fmt chunk size
  h.writeUInt16LE(1, 20); // PCM
  h.writeUInt16LE(channels, 22);
  h.writeUInt32LE(sampleRate, 24);
  h.writeUInt32LE(sampleRate * blockAlign, 28); // byte rate
  h.writeUInt16LE(blockAlign, 32);
  h.writeUInt16LE(bitsPerSample, 34);
  h.write('data', 36, 'ascii');
  h.writeUInt32LE(Math.min(MAX_U32, dataBytes), 40);
  return h;
}
