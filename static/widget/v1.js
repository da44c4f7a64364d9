/* Voice agent call widget, v1.
 *
 *   <script src="https://HOST/static/widget/v1.js" data-key="pk_..." data-persona="SLUG" async></script>
 *
 * A floating call button in a Shadow DOM. On click: POST HOST/v1/widget/check
 * (is this key allowed on this page, for this persona? nothing is minted), and
 * only then microphone permission, POST HOST/v1/widget/sessions for a
 * short-lived client secret, then a WebRTC
 * call to HOST/v1/realtime/calls (events on the "oai-events" data channel).
 * Where WebRTC is missing or does not connect it falls back to the WebSocket
 * endpoint with AudioWorklet capture and an adaptive jitter-buffered player
 * (worklet.js beside this file). It talks to no one but HOST.
 *
 * Optional attributes: data-transport="websocket" (skip WebRTC),
 * data-label (button text), data-position="left".
 * Each widget is reachable as element.voiceAgent and in window.voiceAgentWidgets.
 */
(function () {
  "use strict";

  var script =
    document.currentScript ||
    document.querySelector('script[src*="/static/widget/v1.js"][data-key]');
  if (!script || script.__voiceAgentBooted) return;
  script.__voiceAgentBooted = true;

  var BASE = new URL(script.src, location.href).origin;
  var WORKLET_URL = new URL("worklet.js", new URL(script.src, location.href)).href; // beside v1.js
  var KEY = script.getAttribute("data-key") || "";
  var PERSONA = script.getAttribute("data-persona") || "";
  var FORCE_WS = script.getAttribute("data-transport") === "websocket";
  var LABEL = script.getAttribute("data-label") || "Talk to us";
  var LEFT = script.getAttribute("data-position") === "left";
  // The dashboard's test call: a same-origin endpoint that trades the member's
  // login (and CSRF token) for a client secret, instead of the publishable key.
  var SESSION_URL = script.getAttribute("data-session-url") || "";
  var ICE_CONNECT_MS = 8000;
  var ICE_GATHER_MS = 2500;

  var STATE_TEXT = {
    idle: "Ready",
    connecting: "Connecting\u2026",
    listening: "Listening",
    thinking: "Thinking\u2026",
    speaking: "Speaking",
    ended: "Call ended",
    error: "Not connected",
  };
  var END_REASONS = {
    max_duration: "The call reached its time limit.",
    session_expired: "The call reached its time limit.",
    idle_timeout: "The call ended after a long silence.",
    quota_exceeded: "The call ended: the usage limit was reached.",
    server_shutdown: "The service restarted. Please call again.",
    concurrency_limit: "All lines are busy right now. Please try again in a minute.",
    server_busy: "All lines are busy right now. Please try again in a few seconds.",
    rate_limit_exceeded: "Too many calls were started. Please wait a minute.",
    error: "Something went wrong on our side. Please call again.",
    agent_hangup: "The call ended. Thank you for calling.",
  };

  // Refusals of the key, the page's origin or the persona: the visitor gets one
  // plain sentence; the site owner's reason goes to the console.
  var NOT_HERE = "This assistant is not available on this site.";
  var REFUSALS = {
    origin_required: NOT_HERE,
    origin_not_allowed: NOT_HERE,
    invalid_publishable_key: NOT_HERE,
    publishable_key_revoked: NOT_HERE,
    model_not_found: NOT_HERE,
    model_not_active: NOT_HERE,
    missing_model: NOT_HERE,
    invalid_value: NOT_HERE,
    insufficient_quota: "This assistant is not available right now. Please try again later.",
  };

  function reasonText(reason) {
    // close reasons are codes ("idle_timeout"); show words, never a raw code
    if (!reason || reason === "hangup") return null;
    if (END_REASONS[reason]) return END_REASONS[reason];
    return /^[a-z0-9_]+$/.test(reason) ? null : reason;
  }

  var CSS =
    ":host{all:initial;position:fixed;bottom:20px;" +
    (LEFT ? "left" : "right") +
    ":20px;z-index:2147483000;font:14px/1.4 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;color:#1d1d1f}" +
    "*{box-sizing:border-box}" +
    ".launcher{display:flex;align-items:center;gap:8px;margin-left:auto;border:0;border-radius:999px;padding:12px 18px;" +
    "background:#1f6feb;color:#fff;font:inherit;font-weight:600;cursor:pointer;box-shadow:0 4px 14px rgba(0,0,0,.25)}" +
    ".launcher[data-active=true]{background:#d1242f}" +
    ".launcher:focus-visible,button:focus-visible{outline:3px solid #ffbf47;outline-offset:2px}" +
    ".launcher svg{width:18px;height:18px;fill:currentColor}" +
    ".panel{width:320px;max-width:calc(100vw - 40px);margin-bottom:12px;background:#fff;border-radius:14px;" +
    "box-shadow:0 8px 30px rgba(0,0,0,.25);padding:14px;display:flex;flex-direction:column;gap:10px}" +
    ".panel[hidden]{display:none}" +
    ".head{display:flex;align-items:center;justify-content:space-between;gap:8px}" +
    ".title{font-weight:700;flex:1}" +
    ".close{border:0;background:none;font:inherit;font-size:20px;line-height:1;cursor:pointer;color:#57606a;padding:0 4px}" +
    ".state{display:flex;align-items:center;gap:6px;font-size:13px;color:#57606a}" +
    ".dot{width:10px;height:10px;border-radius:50%;background:#8c959f}" +
    "[data-state=listening] .dot{background:#1a7f37}" +
    "[data-state=thinking] .dot{background:#bf8700}" +
    "[data-state=speaking] .dot{background:#1f6feb}" +
    "[data-state=error] .dot{background:#d1242f}" +
    "@media (prefers-reduced-motion:no-preference){[data-state=speaking] .dot,[data-state=thinking] .dot{animation:p 1s infinite}}" +
    "@keyframes p{50%{opacity:.35}}" +
    ".meter{height:6px;border-radius:3px;background:#eaeef2;overflow:hidden}" +
    ".meter>div{height:100%;width:0;background:#1a7f37;transition:width 60ms linear}" +
    ".captions{max-height:200px;min-height:48px;overflow-y:auto;display:flex;flex-direction:column;gap:6px;font-size:14px}" +
    ".line{margin:0}.line .who{font-weight:600;margin-right:4px}.line.agent .who{color:#1f6feb}.line.user .who{color:#1a7f37}" +
    ".line.cut .text::after{content:' \u2014'}" +
    ".message{margin:0;padding:8px;border-radius:8px;background:#fff8c5;font-size:13px}" +
    ".message[hidden]{display:none}" +
    ".handoff{margin:0;padding:8px;border-radius:8px;background:#e7f3ff;font-size:13px}" +
    ".handoff[hidden]{display:none}.handoff a{display:block;margin-top:4px;font-weight:600}" +
    ".controls{display:flex;gap:8px}" +
    ".controls button{flex:1;border:1px solid #d0d7de;border-radius:8px;padding:8px;background:#f6f8fa;font:inherit;cursor:pointer;color:inherit}" +
    ".controls button[aria-pressed=true]{background:#fff1e5;border-color:#bc4c00}" +
    ".controls .hangup{background:#d1242f;border-color:#d1242f;color:#fff}" +
    ".controls button:disabled{opacity:.5;cursor:default}" +
    ".sr{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}";

  var PHONE =
    '<svg viewBox="0 0 24 24" aria-hidden="true"><path d="M6.6 10.8a15.1 15.1 0 0 0 6.6 6.6l2.2-2.2c.3-.3.7-.4 1-.2 1.1.4 2.3.6 3.6.6.6 0 1 .4 1 1V20c0 .6-.4 1-1 1A17 17 0 0 1 3 4c0-.6.4-1 1-1h3.5c.6 0 1 .4 1 1 0 1.3.2 2.5.6 3.6.1.3 0 .7-.2 1z"/></svg>';

  function el(tag, attrs, text) {
    var node = document.createElement(tag);
    for (var k in attrs || {}) node.setAttribute(k, attrs[k]);
    if (text) node.textContent = text;
    return node;
  }

  function b64FromBuffer(buffer) {
    var bytes = new Uint8Array(buffer);
    var s = "";
    for (var i = 0; i < bytes.length; i += 0x8000) {
      s += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
    }
    return btoa(s);
  }

  function bufferFromB64(text) {
    var s = atob(text);
    var bytes = new Uint8Array(s.length);
    for (var i = 0; i < s.length; i++) bytes[i] = s.charCodeAt(i);
    return bytes.buffer;
  }

  function rms(analyser, data) {
    analyser.getFloatTimeDomainData(data);
    var sum = 0;
    for (var i = 0; i < data.length; i++) sum += data[i] * data[i];
    return Math.sqrt(sum / data.length);
  }

  function delay(ms) {
    return new Promise(function (resolve) {
      setTimeout(resolve, ms);
    });
  }

  function CallError(message, code) {
    var e = new Error(message);
    e.code = code || "error";
    return e;
  }

  // A refusal from the server as the visitor should read it; the server's own
  // message (meant for the site owner) is logged and kept as error.reason.
  function refusal(status, err) {
    var code = err.code || "http_" + status;
    var reason = err.message || "HTTP " + status;
    var text = REFUSALS[code] || END_REASONS[code];
    if (REFUSALS[code]) {
      console.warn("[voice widget] The call was refused (" + code + "): " + reason);
    }
    var e = CallError(text || "The call could not be started (" + status + ").", code);
    e.reason = reason;
    return e;
  }

  function Widget() {
    var self = this;
    this.state = "idle";
    this.states = []; // every state this widget went through, for tests and support
    this.transport = null; // "webrtc" | "websocket" during a call
    this.transports = []; // every transport tried, in order
    this.events = []; // types of the server events received
    this.outputAudibleMs = 0; // agent audio heard, measured on the output
    this.outputPeak = 0;
    this.micPeak = 0;
    this.lastError = null;
    this.call = null;

    this.host = el("div", { "data-voice-agent": PERSONA });
    var root = this.host.attachShadow({ mode: "open" });
    root.appendChild(el("style", {}, CSS));
    var wrap = el("div", { class: "wrap", "data-state": "idle" });
    this.wrap = wrap;
    this.panel = el("section", { class: "panel", role: "region", "aria-label": "Voice call", hidden: "" });
    var head = el("div", { class: "head" });
    this.title = el("span", { class: "title" }, "Voice assistant");
    var state = el("span", { class: "state" });
    state.appendChild(el("span", { class: "dot", "aria-hidden": "true" }));
    this.stateText = el("span", { class: "state-text", role: "status", "aria-live": "polite" }, "Ready");
    state.appendChild(this.stateText);
    this.closeButton = el("button", { type: "button", class: "close", "aria-label": "Close the call panel" }, "\u00d7");
    head.appendChild(this.title);
    head.appendChild(state);
    head.appendChild(this.closeButton);
    this.meter = el("div", { class: "meter", "aria-hidden": "true" });
    this.meterBar = el("div");
    this.meter.appendChild(this.meterBar);
    this.captions = el("div", {
      class: "captions",
      role: "log",
      "aria-live": "polite",
      "aria-label": "Live captions",
    });
    this.message = el("p", { class: "message", role: "alert", hidden: "" });
    // Where a caller who asked for a person goes (the persona's transfer_call action)
    this.handoff = el("p", { class: "handoff", role: "status", hidden: "" });
    var controls = el("div", { class: "controls" });
    this.muteButton = el("button", { type: "button", class: "mute", "aria-pressed": "false", disabled: "" }, "Mute");
    this.hangupButton = el("button", { type: "button", class: "hangup", disabled: "" }, "Hang up");
    controls.appendChild(this.muteButton);
    controls.appendChild(this.hangupButton);
    [head, this.meter, this.captions, this.handoff, this.message, controls].forEach(function (n) {
      self.panel.appendChild(n);
    });
    this.launcher = el("button", { type: "button", class: "launcher", "aria-expanded": "false" });
    this.launcher.innerHTML = PHONE;
    this.launcherText = el("span", {}, LABEL);
    this.launcher.appendChild(this.launcherText);
    this.launcher.setAttribute("aria-label", LABEL + ": start a voice call");
    wrap.appendChild(this.panel);
    wrap.appendChild(this.launcher);
    this.audio = el("audio", { autoplay: "" });
    wrap.appendChild(this.audio);
    root.appendChild(wrap);

    this.launcher.addEventListener("click", function () {
      if (self.call) self.hangUp();
      else self.start();
    });
    this.hangupButton.addEventListener("click", function () {
      self.hangUp();
    });
    this.muteButton.addEventListener("click", function () {
      self.setMuted(!self.muted);
    });
    this.closeButton.addEventListener("click", function () {
      self.closePanel();
    });
    this.host.addEventListener("keydown", function (e) {
      if (e.key !== "Escape") return;
      e.preventDefault();
      if (self.call) self.hangUp();
      else self.closePanel();
    });
    window.addEventListener("offline", function () {
      if (self.call) self.showMessage("Your device went offline. The call may drop.");
    });
    this.host.voiceAgent = this;
  }

  Widget.prototype.closePanel = function () {
    this.panel.hidden = true;
    this.launcher.setAttribute("aria-expanded", "false");
    this.launcher.focus();
  };

  Widget.prototype.setState = function (state) {
    if (this.state === state) return;
    this.state = state;
    this.states.push(state);
    this.wrap.setAttribute("data-state", state);
    this.stateText.textContent = STATE_TEXT[state] || state;
  };

  Widget.prototype.showMessage = function (text) {
    this.message.textContent = text;
    this.message.hidden = !text;
  };

  Widget.prototype.setMuted = function (muted) {
    this.muted = !!muted;
    this.muteButton.setAttribute("aria-pressed", String(this.muted));
    this.muteButton.textContent = this.muted ? "Unmute" : "Mute";
    if (this.call && this.call.mic) {
      var muted_ = this.muted;
      this.call.mic.getAudioTracks().forEach(function (t) {
        t.enabled = !muted_;
      });
    }
  };

  // The business's handoff: its text, and its link when it is an https one.
  Widget.prototype.showHandoff = function (handoff) {
    this.handoff.textContent = "";
    this.handoff.hidden = !handoff;
    if (!handoff) return;
    this.handoff.appendChild(document.createTextNode(handoff.text || "Someone from the team will help you."));
    if (typeof handoff.url === "string" && /^https:\/\//.test(handoff.url)) {
      var link = el("a", { href: handoff.url, target: "_blank", rel: "noopener noreferrer" }, "Contact the team");
      this.handoff.appendChild(link);
    }
  };

  // ----- captions -----------------------------------------------------------

  Widget.prototype.line = function (role, id) {
    var key = role + ":" + (id || "");
    var node = this.captions.querySelector('[data-key="' + CSS_escape(key) + '"]');
    if (!node) {
      node = el("p", { class: "line " + role, "data-key": key });
      node.appendChild(el("span", { class: "who" }, role === "user" ? "You:" : this.name + ":"));
      node.appendChild(el("span", { class: "text" }));
      this.captions.appendChild(node);
      while (this.captions.children.length > 60) this.captions.removeChild(this.captions.firstChild);
    }
    this.captions.scrollTop = this.captions.scrollHeight;
    return node.querySelector(".text");
  };

  function CSS_escape(s) {
    return String(s).replace(/["\\]/g, "\\$&");
  }

  Widget.prototype.caption = function (role, id, text, replace) {
    if (!text && !replace) return;
    var node = this.line(role, id);
    node.textContent = replace ? text : node.textContent + text;
    if (!node.textContent) node.parentNode.remove();
  };

  // ----- the call -----------------------------------------------------------

  Widget.prototype.start = async function () {
    if (this.call) return;
    var call = (this.call = { id: Math.random(), closing: false, cleanups: [] });
    this.captions.textContent = "";
    this.showHandoff(null);
    this.showMessage("");
    this.lastError = null;
    this.panel.hidden = false;
    this.launcher.setAttribute("aria-expanded", "true");
    this.launcher.setAttribute("data-active", "true");
    this.launcher.setAttribute("aria-label", "End the voice call");
    this.launcherText.textContent = "End call";
    this.hangupButton.disabled = false;
    this.muteButton.disabled = false;
    this.setState("connecting");
    this.hangupButton.focus();
    // The AudioContext is made inside the click, so the browser lets it play.
    var Ctx = window.AudioContext || window.webkitAudioContext;
    try {
      call.ctx = new Ctx();
      if (call.ctx.state === "suspended") call.ctx.resume();
    } catch (e) {
      call.ctx = null;
    }
    try {
      // Ask the server first: a visitor on a page the key is not for is never
      // asked for their microphone.
      if (!SESSION_URL) await this.check(call);
      if (this.call !== call) return this.release(call);
      if (!navigator.mediaDevices || !navigator.mediaDevices.getUserMedia) {
        throw CallError("This browser cannot use a microphone here (a secure https page is needed).", "no_media");
      }
      try {
        call.mic = await navigator.mediaDevices.getUserMedia({
          audio: { echoCancellation: true, noiseSuppression: true, autoGainControl: true },
        });
      } catch (e) {
        if (e && (e.name === "NotAllowedError" || e.name === "SecurityError")) {
          throw CallError(
            "Microphone access was denied. Allow the microphone for this site in your browser and try again.",
            "mic_denied"
          );
        }
        if (e && e.name === "NotFoundError") throw CallError("No microphone was found on this device.", "no_mic");
        throw CallError("The microphone could not be started: " + (e && e.message), "mic_error");
      }
      if (this.call !== call) return this.release(call);
      this.setMuted(this.muted);
      this.watchLevels(call);
      var useRtc = !FORCE_WS && typeof window.RTCPeerConnection === "function";
      if (useRtc) {
        try {
          await this.connectWebRTC(call, await this.session(call));
        } catch (e) {
          if (this.call !== call || e.code !== "ice_failed") throw e;
          this.teardownTransport(call);
          useRtc = false;
        }
      }
      if (!useRtc) await this.connectWebSocket(call, await this.session(call));
      if (this.call !== call) return;
      if (this.state === "connecting") this.setState("listening");
    } catch (e) {
      if (this.call === call) this.fail(e);
      else this.release(call);
    }
  };

  Widget.prototype.check = async function (call) {
    var response;
    try {
      response = await fetch(BASE + "/v1/widget/check", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ key: KEY, persona: PERSONA }),
        credentials: "omit",
      });
    } catch (e) {
      throw CallError("Could not reach the voice service. Check your connection and try again.", "network");
    }
    var body = await response.json().catch(function () {
      return {};
    });
    if (!response.ok) throw refusal(response.status, body.error || {});
    if (this.call === call && body.persona && body.persona.name) {
      this.name = body.persona.name;
      this.title.textContent = body.persona.name;
    }
  };

  Widget.prototype.session = async function (call) {
    var response;
    try {
      if (SESSION_URL) {
        var csrf = (document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/) || [])[1] || "";
        response = await fetch(SESSION_URL, {
          method: "POST",
          headers: { "X-CSRFToken": decodeURIComponent(csrf) },
          credentials: "same-origin",
        });
      } else {
        response = await fetch(BASE + "/v1/widget/sessions", {
          method: "POST",
          headers: { "Content-Type": "application/json" },
          body: JSON.stringify({ key: KEY, persona: PERSONA }),
          credentials: "omit",
        });
      }
    } catch (e) {
      throw CallError("Could not reach the voice service. Check your connection and try again.", "network");
    }
    var body = await response.json().catch(function () {
      return {};
    });
    if (!response.ok) {
      var err = body.error || {};
      // the dashboard's test call shows a member the server's own words
      if (!SESSION_URL) throw refusal(response.status, err);
      throw CallError(err.message || "The call could not be started (" + response.status + ").", err.code);
    }
    if (this.call !== call) throw CallError("cancelled", "cancelled");
    if (body.persona && body.persona.name) {
      this.name = body.persona.name;
      this.title.textContent = body.persona.name;
    }
    return body;
  };

  Widget.prototype.connectWebRTC = async function (call, session) {
    var self = this;
    var pc = new RTCPeerConnection({ iceServers: session.ice_servers || [] });
    call.pc = pc;
    this.transport = "webrtc";
    this.transports.push("webrtc");
    call.mic.getAudioTracks().forEach(function (t) {
      pc.addTrack(t, call.mic);
    });
    var dc = pc.createDataChannel("oai-events");
    call.dc = dc;
    dc.onmessage = function (e) {
      try {
        self.onEvent(call, JSON.parse(e.data));
      } catch (err) {
        /* not JSON: ignore */
      }
    };
    call.send = function (event) {
      if (dc.readyState === "open") dc.send(JSON.stringify(event));
    };
    pc.ontrack = function (e) {
      var stream = (e.streams && e.streams[0]) || new MediaStream([e.track]);
      self.audio.srcObject = stream;
      var played = self.audio.play();
      if (played && played.catch) played.catch(function () {});
      if (call.ctx) {
        call.outAnalyser = call.ctx.createAnalyser();
        call.outAnalyser.fftSize = 1024;
        call.ctx.createMediaStreamSource(stream).connect(call.outAnalyser);
      }
    };
    var offer = await pc.createOffer();
    await pc.setLocalDescription(offer);
    await new Promise(function (resolve) {
      // no trickle ICE: the offer goes with the candidates gathered by then
      if (pc.iceGatheringState === "complete") return resolve();
      var timer = setTimeout(resolve, ICE_GATHER_MS);
      pc.addEventListener("icegatheringstatechange", function () {
        if (pc.iceGatheringState === "complete") {
          clearTimeout(timer);
          resolve();
        }
      });
    });
    if (this.call !== call) throw CallError("cancelled", "cancelled");
    if (!/\na=candidate:/.test(pc.localDescription.sdp)) {
      // nothing to connect from (relay-only policy without a usable TURN server)
      throw CallError("WebRTC has no network path", "ice_failed");
    }
    var response;
    try {
      response = await fetch(BASE + (session.calls_url || "/v1/realtime/calls") + "?model=" + encodeURIComponent(PERSONA), {
        method: "POST",
        headers: {
          "Content-Type": "application/sdp",
          Authorization: "Bearer " + session.client_secret.value,
        },
        body: pc.localDescription.sdp,
        credentials: "omit",
      });
    } catch (e) {
      throw CallError("Could not reach the voice service. Check your connection and try again.", "network");
    }
    if (!response.ok) {
      var body = await response.json().catch(function () {
        return {};
      });
      var err = body.error || {};
      throw CallError(err.message || "The call could not be started (" + response.status + ").", err.code);
    }
    await pc.setRemoteDescription({ type: "answer", sdp: await response.text() });
    await new Promise(function (resolve, reject) {
      var timer = setTimeout(function () {
        reject(CallError("WebRTC did not connect", "ice_failed"));
      }, ICE_CONNECT_MS);
      function check() {
        if (dc.readyState === "open") {
          clearTimeout(timer);
          resolve();
        } else if (pc.connectionState === "failed" || pc.connectionState === "closed") {
          clearTimeout(timer);
          reject(CallError("WebRTC did not connect", "ice_failed"));
        }
      }
      dc.addEventListener("open", check);
      pc.addEventListener("connectionstatechange", check);
      check();
    });
    // From here on, losing the peer or the channel ends the call.
    dc.addEventListener("close", function () {
      self.ended(call, null);
    });
    pc.addEventListener("connectionstatechange", function () {
      if (pc.connectionState === "failed") self.ended(call, "lost");
      if (pc.connectionState === "disconnected") {
        setTimeout(function () {
          if (pc.connectionState === "disconnected") self.ended(call, "lost");
        }, 5000);
      }
    });
  };

  Widget.prototype.connectWebSocket = async function (call, session) {
    var self = this;
    if (!call.ctx || !call.ctx.audioWorklet) {
      throw CallError("This browser cannot play the call audio.", "no_audio");
    }
    this.transport = "websocket";
    this.transports.push("websocket");
    var ctx = call.ctx;
    await ctx.audioWorklet.addModule(WORKLET_URL);
    var url = BASE.replace(/^http/, "ws") + (session.websocket_url || "/v1/realtime?model=" + encodeURIComponent(PERSONA));
    var ws = new WebSocket(url, ["realtime", "openai-insecure-api-key." + session.client_secret.value]);
    call.ws = ws;
    await new Promise(function (resolve, reject) {
      ws.onopen = resolve;
      ws.onerror = function () {
        reject(CallError("Could not reach the voice service. Check your connection and try again.", "network"));
      };
      ws.onclose = function (e) {
        reject(CallError(reasonText(e.reason) || "The call could not be started. Please try again.", "closed"));
      };
    });
    call.send = function (event) {
      if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(event));
    };
    ws.onmessage = function (e) {
      try {
        self.onEvent(call, JSON.parse(e.data));
      } catch (err) {
        /* not JSON: ignore */
      }
    };
    ws.onerror = null;
    ws.onclose = function (e) {
      self.ended(call, e.code === 1000 ? e.reason || null : e.reason || "lost");
    };
    var source = ctx.createMediaStreamSource(call.mic);
    var capture = new AudioWorkletNode(ctx, "vaw-capture", { numberOfInputs: 1, numberOfOutputs: 0 });
    capture.port.onmessage = function (e) {
      if (!self.muted) call.send({ type: "input_audio_buffer.append", audio: b64FromBuffer(e.data) });
    };
    source.connect(capture);
    var player = new AudioWorkletNode(ctx, "vaw-player", { numberOfInputs: 0, outputChannelCount: [1] });
    call.player = player;
    call.playedMs = 0;
    player.port.onmessage = function (e) {
      call.playedMs = e.data.ms;
      call.jitter = e.data;
      if (e.data.idle && call.responseDone) self.afterReply(call);
    };
    call.outAnalyser = ctx.createAnalyser();
    call.outAnalyser.fftSize = 1024;
    player.connect(call.outAnalyser);
    call.outAnalyser.connect(ctx.destination);
    call.cleanups.push(function () {
      source.disconnect();
      capture.disconnect();
      player.disconnect();
    });
  };

  Widget.prototype.watchLevels = function (call) {
    var self = this;
    if (!call.ctx) return;
    var micAnalyser = call.ctx.createAnalyser();
    micAnalyser.fftSize = 1024;
    var micSource = call.ctx.createMediaStreamSource(call.mic);
    micSource.connect(micAnalyser);
    var data = new Float32Array(micAnalyser.fftSize);
    var quietMs = 0;
    var timer = setInterval(function () {
      var level = self.muted ? 0 : rms(micAnalyser, data);
      self.micPeak = Math.max(self.micPeak, level);
      self.meterBar.style.width = Math.min(100, Math.round(level * 400)) + "%";
      if (call.outAnalyser) {
        var out = rms(call.outAnalyser, data);
        self.outputPeak = Math.max(self.outputPeak, out);
        if (out > 0.01) {
          self.outputAudibleMs += 50;
          quietMs = 0;
        } else {
          quietMs += 50;
        }
        // WebRTC: the reply has played out once the output has been quiet a while
        if (call.responseDone && self.transport === "webrtc" && quietMs >= 400) self.afterReply(call);
      }
    }, 50);
    call.cleanups.push(function () {
      clearInterval(timer);
      micSource.disconnect();
    });
  };

  Widget.prototype.afterReply = function (call) {
    call.responseDone = false;
    if (this.call === call && this.state === "speaking") this.setState("listening");
  };

  Widget.prototype.onEvent = function (call, ev) {
    if (this.call !== call || !ev || typeof ev.type !== "string") return;
    this.events.push(ev.type);
    switch (ev.type) {
      case "session.created":
        if (this.state === "connecting") this.setState("listening");
        break;
      case "input_audio_buffer.speech_started":
        if (call.player && call.responseItem) {
          // barge-in: stop playing, and tell the server what was heard
          call.player.port.postMessage({ type: "flush" });
          call.send({
            type: "conversation.item.truncate",
            item_id: call.responseItem,
            content_index: 0,
            audio_end_ms: Math.round(call.playedMs || 0),
          });
          call.responseItem = null;
        }
        call.responseDone = false;
        this.setState("listening");
        break;
      case "input_audio_buffer.speech_stopped":
      case "input_audio_buffer.committed":
        this.setState("thinking");
        break;
      case "conversation.item.input_audio_transcription.delta":
        this.caption("user", ev.item_id, ev.delta || "", false);
        break;
      case "conversation.item.input_audio_transcription.completed":
        this.caption("user", ev.item_id, (ev.transcript || "").trim(), true);
        break;
      case "response.created":
        call.responseDone = false;
        if (this.state !== "speaking") this.setState("thinking");
        break;
      case "response.output_item.added":
        if (ev.item && ev.item.id && call.player) {
          call.responseItem = ev.item.id;
          call.player.port.postMessage({ type: "mark" });
        }
        break;
      case "response.output_audio_transcript.delta":
        this.caption("agent", ev.item_id || ev.response_id, ev.delta || "", false);
        this.setState("speaking");
        break;
      case "response.output_audio_transcript.done":
        this.caption("agent", ev.item_id || ev.response_id, ev.transcript || "", true);
        break;
      case "response.output_audio.delta":
        if (call.player && ev.delta) {
          var pcm = bufferFromB64(ev.delta);
          call.player.port.postMessage({ type: "audio", pcm: pcm }, [pcm]);
        }
        this.setState("speaking");
        break;
      case "response.done":
        var response = ev.response || {};
        if (response.handoff) this.showHandoff(response.handoff);
        if (response.status === "cancelled") {
          var items = this.captions.querySelectorAll(".line.agent");
          if (items.length) items[items.length - 1].classList.add("cut");
        }
        if (call.player) call.player.port.postMessage({ type: "end" });
        if (this.state === "speaking") call.responseDone = true;
        else if (this.state === "thinking") this.setState("listening");
        break;
      case "error":
        var err = ev.error || {};
        this.lastError = err;
        if (err.type === "server_error" || err.code === "quota_exceeded") {
          this.showMessage(err.message || "Something went wrong on our side.");
        }
        break;
    }
  };

  Widget.prototype.ended = function (call, reason) {
    if (this.call !== call || call.closing) return;
    var text;
    if (reason === "lost") text = "The connection was lost. Check your network and call again.";
    else if (reasonText(reason)) text = reasonText(reason);
    else if (this.lastError && reasonText(this.lastError.code)) text = reasonText(this.lastError.code);
    else if (this.lastError && this.lastError.message && this.lastError.type !== "invalid_request_error")
      text = "The call ended: " + this.lastError.message;
    else text = "The call ended.";
    this.finish(call, "ended", text);
  };

  Widget.prototype.fail = function (error) {
    var call = this.call;
    if (!call) return;
    this.lastError = { code: error.code, message: error.message, reason: error.reason || null };
    this.finish(call, "error", error.message || "The call could not be started.");
  };

  Widget.prototype.hangUp = function () {
    var call = this.call;
    if (!call) return;
    this.finish(call, "ended", "You ended the call.");
  };

  Widget.prototype.finish = function (call, state, message) {
    call.closing = true;
    this.call = null;
    this.release(call);
    this.setState(state);
    this.showMessage(message);
    this.hangupButton.disabled = true;
    this.muteButton.disabled = true;
    this.meterBar.style.width = "0";
    this.launcher.setAttribute("data-active", "false");
    this.launcher.setAttribute("aria-label", LABEL + ": call again");
    this.launcherText.textContent = "Call again";
    this.launcher.focus();
  };

  Widget.prototype.teardownTransport = function (call) {
    if (call.dc) call.dc.onmessage = null;
    if (call.pc) {
      try {
        call.pc.close();
      } catch (e) {}
    }
    if (call.ws) {
      call.ws.onclose = null;
      try {
        call.ws.close(1000, "hangup");
      } catch (e) {}
    }
    call.pc = call.dc = call.ws = call.player = call.outAnalyser = null;
    call.send = function () {};
    this.audio.srcObject = null;
  };

  Widget.prototype.release = function (call) {
    this.teardownTransport(call);
    call.cleanups.forEach(function (fn) {
      try {
        fn();
      } catch (e) {}
    });
    call.cleanups = [];
    if (call.mic) {
      call.mic.getTracks().forEach(function (t) {
        t.stop();
      });
    }
    if (call.ctx) {
      var ctx = call.ctx;
      delay(300).then(function () {
        ctx.close().catch(function () {});
      });
    }
    this.transport = null;
  };

  Widget.prototype.name = "Agent";

  function boot() {
    var widget = new Widget();
    document.body.appendChild(widget.host);
    window.voiceAgentWidgets = window.voiceAgentWidgets || [];
    window.voiceAgentWidgets.push(widget);
  }

  if (document.body) boot();
  else document.addEventListener("DOMContentLoaded", boot);
})();
