/* The browser benchmark's probe (bench/browser.py), an init script that runs
 * before the widget. It times a call on the page's own audio clock:
 *
 * - the widget's AudioContext is remembered, and a tap worklet is loaded into it;
 * - the microphone stream getUserMedia hands the widget is tapped there (after
 *   Chromium's own audio processing, as the widget sends it);
 * - so is what the page plays: the remote WebRTC track (which the widget plays
 *   through its <audio> element), or the widget's WebSocket player node;
 * - each tap reports its loud runs as [start, end] in AudioContext seconds:
 *   the microphone's 10 ms windows over -40 dBFS RMS (as bench/questions.py
 *   finds the end of speech), the output's samples over 2 % of full scale;
 * - server events (data channel or WebSocket) are kept with performance.now();
 * - getStats() of the peer is sampled every 500 ms.
 */
(() => {
  "use strict";
  const probe = {
    mic: [],
    out: [],
    events: [],
    stats: [],
    clock: [],
    ctx: null,
    pc: null,
    ready: null,
    errors: [],
  };
  window.__probe = probe;

  const TAP = `
    class Tap extends AudioWorkletProcessor {
      constructor(options) {
        super();
        const o = options.processorOptions;
        this.rms = o.rms;            // true: a 10 ms window is loud by RMS; false: by peak
        this.threshold = o.threshold;
        this.holdS = o.holdS;        // a run ends after this long without loud audio
        this.window = Math.round(sampleRate / 100);
        this.sum = 0;
        this.peak = 0;
        this.n = 0;
        this.firstLoud = null;       // time of the window's first loud sample
        this.start = null;
        this.end = 0;
      }
      process(inputs) {
        const input = inputs[0];
        if (!input || !input.length) return true;
        const ch = input[0];
        for (let i = 0; i < ch.length; i++) {
          const v = ch[i];
          const a = v < 0 ? -v : v;
          this.sum += v * v;
          if (a > this.peak) this.peak = a;
          if (a > this.threshold && this.firstLoud === null) this.firstLoud = currentTime + i / sampleRate;
          this.n += 1;
          if (this.n === this.window) {
            const t1 = currentTime + (i + 1) / sampleRate;
            const t0 = t1 - this.window / sampleRate;
            const loud = this.rms ? Math.sqrt(this.sum / this.n) > this.threshold : this.peak > this.threshold;
            if (loud) {
              if (this.start === null) this.start = this.rms ? t0 : this.firstLoud;
              this.end = t1;
            } else if (this.start !== null && t1 - this.end >= this.holdS) {
              this.port.postMessage([this.start, this.end]);
              this.start = null;
            }
            this.sum = 0;
            this.peak = 0;
            this.n = 0;
            this.firstLoud = null;
          }
        }
        return true;
      }
    }
    registerProcessor("probe-tap", Tap);
  `;
  const OPTIONS = {
    mic: { rms: true, threshold: 0.01, holdS: 0.3 },
    out: { rms: false, threshold: 0.02, holdS: 0.3 },
  };

  const NativeContext = window.AudioContext;
  const NativeNode = window.AudioWorkletNode;
  const NativePeer = window.RTCPeerConnection;
  const NativeSocket = window.WebSocket;

  function tap(kind, connect) {
    if (!probe.ready) {
      probe.errors.push("no AudioContext for the " + kind + " tap");
      return;
    }
    probe.ready
      .then(() => {
        const node = new NativeNode(probe.ctx, "probe-tap", {
          numberOfInputs: 1,
          numberOfOutputs: 0,
          channelCount: 1,
          channelCountMode: "explicit",
          processorOptions: OPTIONS[kind],
        });
        node.port.onmessage = (e) => probe[kind].push(e.data);
        connect(node);
      })
      .catch((e) => probe.errors.push(kind + ": " + e));
  }

  window.AudioContext = class extends NativeContext {
    constructor(options) {
      super(options);
      probe.ctx = this;
      const url = URL.createObjectURL(new Blob([TAP], { type: "application/javascript" }));
      probe.ready = this.audioWorklet.addModule(url);
      const stamp = () => {
        if (this.state === "closed") return;
        const ts = this.getOutputTimestamp();
        probe.clock.push([this.currentTime, performance.now(), ts.contextTime, ts.performanceTime]);
      };
      const timer = setInterval(stamp, 1000);
      this.addEventListener("statechange", () => {
        if (this.state === "closed") clearInterval(timer);
      });
      probe.latency = () => ({ base_s: this.baseLatency, output_s: this.outputLatency, rate: this.sampleRate });
    }
  };

  const getUserMedia = navigator.mediaDevices.getUserMedia.bind(navigator.mediaDevices);
  navigator.mediaDevices.getUserMedia = async (constraints) => {
    const stream = await getUserMedia(constraints);
    probe.micAt = performance.now(); // the fake microphone's file starts playing about now
    probe.micSettings = stream.getAudioTracks().map((t) => t.getSettings());
    tap("mic", (node) => probe.ctx.createMediaStreamSource(stream).connect(node));
    return stream;
  };

  function record(data) {
    let ev;
    try {
      ev = JSON.parse(data);
    } catch (e) {
      return;
    }
    const t = performance.now();
    switch (ev.type) {
      case "response.output_audio.delta": {
        const last = probe.events[probe.events.length - 1];
        if (!last || last.type !== "response.output_audio.delta") probe.events.push({ t, type: ev.type });
        break;
      }
      case "response.done":
        probe.events.push({
          t,
          type: ev.type,
          status: (ev.response || {}).status,
          latency: (ev.response || {}).latency || null,
        });
        break;
      case "conversation.item.input_audio_transcription.completed":
        probe.events.push({ t, type: ev.type, transcript: ev.transcript || "" });
        break;
      case "input_audio_buffer.speech_started":
      case "input_audio_buffer.speech_stopped":
      case "response.created":
      case "session.created":
      case "error":
        probe.events.push({ t, type: ev.type });
        break;
    }
  }

  const INBOUND = [
    "jitterBufferDelay",
    "jitterBufferTargetDelay",
    "jitterBufferMinimumDelay",
    "jitterBufferEmittedCount",
    "totalSamplesReceived",
    "concealedSamples",
    "silentConcealedSamples",
    "insertedSamplesForDeceleration",
    "removedSamplesForAcceleration",
    "totalProcessingDelay",
    "packetsReceived",
    "packetsLost",
    "jitter",
    "audioLevel",
  ];

  async function sampleStats(pc) {
    if (pc.connectionState === "closed") return;
    const report = await pc.getStats();
    const row = { t: performance.now(), wall: Date.now() };
    report.forEach((s) => {
      if (s.type === "inbound-rtp" && s.kind === "audio") {
        row.inbound = {};
        INBOUND.forEach((k) => {
          if (s[k] !== undefined) row.inbound[k] = s[k];
        });
      } else if (s.type === "media-playout") {
        row.playout = { totalPlayoutDelay: s.totalPlayoutDelay, totalSamplesCount: s.totalSamplesCount };
      } else if (s.type === "candidate-pair" && s.nominated) {
        row.rtt_s = s.currentRoundTripTime;
      } else if (s.type === "outbound-rtp" && s.kind === "audio") {
        row.outbound = { packetsSent: s.packetsSent, totalPacketSendDelay: s.totalPacketSendDelay };
      }
    });
    probe.stats.push(row);
  }

  window.RTCPeerConnection = class extends NativePeer {
    constructor(config) {
      super(config);
      probe.pc = this;
      this.addEventListener("track", (e) => {
        probe.receiver = e.receiver;
        const stream = new MediaStream([e.track]);
        tap("out", (node) => probe.ctx.createMediaStreamSource(stream).connect(node));
      });
      const timer = setInterval(() => {
        if (this.connectionState === "closed") return clearInterval(timer);
        sampleStats(this).catch((e) => probe.errors.push("stats: " + e));
      }, 500);
    }
    createDataChannel(label, options) {
      const channel = super.createDataChannel(label, options);
      channel.addEventListener("message", (e) => record(e.data));
      return channel;
    }
  };

  window.WebSocket = class extends NativeSocket {
    constructor(url, protocols) {
      super(url, protocols);
      this.addEventListener("message", (e) => record(e.data));
    }
  };

  window.AudioWorkletNode = class extends NativeNode {
    constructor(ctx, name, options) {
      super(ctx, name, options);
      if (name === "vaw-player") tap("out", (node) => this.connect(node));
    }
  };

  probe.lastStats = () => (probe.pc ? sampleStats(probe.pc).then(() => probe.stats[probe.stats.length - 1]) : null);
})();
