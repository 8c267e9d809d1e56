// The microphone side of a recording: getUserMedia → AudioContext (16 kHz when the browser
// allows it) → the pcm-frames AudioWorklet → one callback per 100 ms frame (3200 bytes).
export type FrameSink = (pcm: Uint8Array, rms: number) => void;

export class MicRecorder {
  private ctx: AudioContext | null = null;
  private stream: MediaStream | null = null;
  private source: MediaStreamAudioSourceNode | null = null;
  private node: AudioWorkletNode | null = null;
  private sink: FrameSink | null = null;

  /** Asks for the microphone and prepares the pipeline; frames flow only after begin(). */
  async open(): Promise<void> {
    this.stream = await navigator.mediaDevices.getUserMedia({
      audio: { channelCount: 1, echoCancellation: false, noiseSuppression: false, autoGainControl: false },
    });
    try {
      this.ctx = new AudioContext({ sampleRate: 16_000 });
    } catch {
      this.ctx = new AudioContext(); // the worklet resamples
    }
    await this.ctx.audioWorklet.addModule('/console/recorder-worklet.js');
    this.source = this.ctx.createMediaStreamSource(this.stream);
    this.node = new AudioWorkletNode(this.ctx, 'pcm-frames', {
      numberOfInputs: 1,
      numberOfOutputs: 1,
      channelCount: 1,
      channelCountMode: 'explicit',
    });
    this.node.port.onmessage = (e: MessageEvent<{ pcm: ArrayBuffer; rms: number }>) =>
      this.sink?.(new Uint8Array(e.data.pcm), e.data.rms);
    // A node nobody pulls may not run: route it to the output through a muted gain.
    const mute = this.ctx.createGain();
    mute.gain.value = 0;
    this.node.connect(mute).connect(this.ctx.destination);
  }

  begin(sink: FrameSink): void {
    this.sink = sink;
    this.source!.connect(this.node!);
    void this.ctx!.resume();
  }

  async close(): Promise<void> {
    this.sink = null;
    this.source?.disconnect();
    for (const t of this.stream?.getTracks() ?? []) t.stop();
    await this.ctx?.close().catch(() => undefined);
    this.ctx = null;
    this.stream = null;
    this.source = null;
    this.node = null;
  }
}
