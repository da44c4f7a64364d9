/* Audio worklets for the call widget's WebSocket transport (loaded by v1.js).
 *
 * vaw-capture: microphone -> PCM16 mono at 24 kHz, posted in ~40 ms chunks.
 * vaw-player:  PCM16 24 kHz chunks -> speaker, through an adaptive jitter
 *              buffer: playback starts once `target` ms are queued; every
 *              underrun raises the target (up to 400 ms), a long smooth run
 *              lowers it again (down to 60 ms). "flush" drops everything
 *              queued (barge-in); the node reports what it played.
 */
"use strict";

const WIRE_RATE = 24000;

class CaptureProcessor extends AudioWorkletProcessor {
  constructor() {
    super();
    this.ratio = sampleRate / WIRE_RATE; // input samples per output sample
    this.acc = 0; // sum of input samples in the current output sample
    this.count = 0; // input samples accumulated
    this.pos = 0; // fractional progress through the current output sample
    this.chunk = new Int16Array(960); // 40 ms at 24 kHz
    this.fill = 0;
  }

  process(inputs) {
    const input = inputs[0];
    if (!input || input.length === 0) return true;
    const channels = input.length;
    const frames = input[0].length;
    for (let i = 0; i < frames; i++) {
      let v = 0;
      for (let c = 0; c < channels; c++) v += input[c][i];
      this.acc += v / channels;
      this.count += 1;
      this.pos += 1;
      if (this.pos >= this.ratio) {
        // box-filter decimation: the mean of the input span is the output sample
        this.pos -= this.ratio;
        const s = Math.max(-1, Math.min(1, this.acc / this.count));
        this.chunk[this.fill++] = s < 0 ? s * 0x8000 : s * 0x7fff;
        this.acc = 0;
        this.count = 0;
        if (this.fill === this.chunk.length) {
          this.port.postMessage(this.chunk.buffer, [this.chunk.buffer]);
          this.chunk = new Int16Array(960);
          this.fill = 0;
        }
      }
    }
    return true;
  }
}

class PlayerProcessor extends AudioWorkletProcessor {
  constructor() {
    super();
    this.queue = []; // Float32Array chunks at WIRE_RATE
    this.head = 0; // read offset in queue[0]
    this.queued = 0; // samples queued at WIRE_RATE
    this.step = WIRE_RATE / sampleRate; // wire samples per output sample
    this.a = 0;
    this.b = 0;
    this.t = 0;
    this.targetMs = 80;
    this.playing = false;
    this.draining = false; // the response ended: play the tail without waiting
    this.smoothMs = 0;
    this.underruns = 0;
    this.playedSamples = 0; // output samples of agent audio since the last "mark"
    this.sinceReport = 0;
    this.port.onmessage = (e) => this.onMessage(e.data);
  }

  onMessage(msg) {
    if (msg.type === "audio") {
      const pcm = new Int16Array(msg.pcm);
      const f = new Float32Array(pcm.length);
      for (let i = 0; i < pcm.length; i++) f[i] = pcm[i] / 32768;
      this.queue.push(f);
      this.queued += f.length;
      this.draining = false;
    } else if (msg.type === "end") {
      this.draining = true;
    } else if (msg.type === "flush") {
      this.queue = [];
      this.head = 0;
      this.queued = 0;
      this.playing = false;
      this.draining = false;
      this.a = this.b = this.t = 0;
      this.report(true);
    } else if (msg.type === "mark") {
      this.playedSamples = 0;
    }
  }

  next() {
    // the next wire sample, or null when the queue is empty
    while (this.queue.length && this.head >= this.queue[0].length) {
      this.queue.shift();
      this.head = 0;
    }
    if (!this.queue.length) return null;
    this.queued -= 1;
    return this.queue[0][this.head++];
  }

  stop() {
    // the queue ran dry
    this.playing = false;
    this.a = this.b = this.t = 0;
    if (!this.draining) {
      // starved mid-stream: wait for a deeper buffer next time
      this.underruns += 1;
      this.targetMs = Math.min(400, this.targetMs + 40);
      this.smoothMs = 0;
    }
    this.report(true);
  }

  report(idle) {
    this.port.postMessage({
      type: "played",
      ms: (1000 * this.playedSamples) / sampleRate,
      bufferedMs: (1000 * this.queued) / WIRE_RATE,
      targetMs: this.targetMs,
      underruns: this.underruns,
      idle: idle,
    });
    this.sinceReport = 0;
  }

  process(inputs, outputs) {
    const out = outputs[0][0];
    const blockMs = (1000 * out.length) / sampleRate;
    const bufferedMs = (1000 * this.queued) / WIRE_RATE;
    if (!this.playing && (bufferedMs >= this.targetMs || (this.draining && this.queued > 0))) {
      this.playing = true;
      this.b = this.next() || 0;
    }
    if (!this.playing) {
      out.fill(0);
      return true;
    }
    for (let i = 0; i < out.length; i++) {
      // linear interpolation between wire samples a and b, t of the way
      out[i] = this.a + (this.b - this.a) * this.t;
      this.playedSamples += 1;
      this.t += this.step;
      while (this.t >= 1) {
        this.t -= 1;
        const s = this.next();
        if (s === null) {
          out.fill(0, i + 1);
          this.stop();
          return true;
        }
        this.a = this.b;
        this.b = s;
      }
    }
    this.smoothMs += blockMs;
    if (this.smoothMs > 10000 && this.targetMs > 60) {
      this.targetMs -= 20;
      this.smoothMs = 0;
    }
    this.sinceReport += blockMs;
    if (this.sinceReport >= 100) this.report(false);
    return true;
  }
}

registerProcessor("vaw-capture", CaptureProcessor);
registerProcessor("vaw-player", PlayerProcessor);
