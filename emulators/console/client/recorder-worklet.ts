// AudioWorklet processor (its own bundle, loaded with audioWorklet.addModule): mono input
// resampled to 16 kHz, cut into 100 ms frames of signed 16-bit little-endian PCM (3200 bytes),
// each posted to the page with its RMS level. The context normally runs at 16 kHz already
// (the browser resamples the microphone); otherwise linear interpolation does it here.
export {};

declare const sampleRate: number;
declare function registerProcessor(name: string, ctor: new (options: unknown) => unknown): void;
declare class AudioWorkletProcessor {
  readonly port: MessagePort;
}

const TARGET_RATE = 16_000;
const FRAME_SAMPLES = 1_600;

class PcmFrameProcessor extends AudioWorkletProcessor {
  private readonly step = sampleRate / TARGET_RATE;
  /** Position of the next output sample, in input samples from the current block's start (-1 = previous block's last). */
  private t = 0;
  private prev = 0;
  private frame = new DataView(new ArrayBuffer(FRAME_SAMPLES * 2));
  private n = 0;
  private sumSquares = 0;

  process(inputs: Float32Array[][]): boolean {
    const input = inputs[0]?.[0];
    if (!input || input.length === 0) return true;
    if (this.step === 1) {
      for (let i = 0; i < input.length; i++) this.push(input[i]);
      return true;
    }
    const last = input.length - 1;
    while (this.t < last) {
      const i = Math.floor(this.t);
      const frac = this.t - i;
      const a = i < 0 ? this.prev : input[i];
      this.push(a + (input[i + 1] - a) * frac);
      this.t += this.step;
    }
    this.t -= input.length;
    this.prev = input[last];
    return true;
  }

  private push(sample: number) {
    const s = Math.max(-1, Math.min(1, sample));
    const v = s < 0 ? Math.round(s * 0x8000) : Math.round(s * 0x7fff);
    this.frame.setInt16(this.n * 2, v, true);
    this.sumSquares += v * v;
    if (++this.n < FRAME_SAMPLES) return;
    const rms = Math.sqrt(this.sumSquares / FRAME_SAMPLES);
    const buffer = this.frame.buffer as ArrayBuffer;
    this.port.postMessage({ pcm: buffer, rms }, [buffer]);
    this.frame = new DataView(new ArrayBuffer(FRAME_SAMPLES * 2));
    this.n = 0;
    this.sumSquares = 0;
  }
}

registerProcessor('pcm-frames', PcmFrameProcessor);
