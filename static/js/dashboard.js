// Dashboard behaviour: voice previews, test calls, copy buttons, org switcher. No dependencies.
(function () {
  "use strict";

  function csrfToken() {
    var m = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    return m ? decodeURIComponent(m[1]) : "";
  }

  function sleep(ms) { return new Promise(function (r) { setTimeout(r, ms); }); }

  async function preview(button) {
    var status = button.parentElement.querySelector(".preview-status");
    var player = button.parentElement.querySelector("audio");
    var url = button.dataset.previewUrl;
    button.disabled = true;
    status.textContent = "Synthesizing…";
    try {
      var resp = await fetch(url, { method: "POST", headers: { "X-CSRFToken": csrfToken() } });
      var state = await resp.json();
      for (var i = 0; state.status === "pending" && i < 120; i++) {
        await sleep(500);
        state = await (await fetch(url)).json();
      }
      if (state.status === "ready") {
        status.textContent = "";
        player.src = state.audio_url;
        player.hidden = false;
        await player.play().catch(function () { status.textContent = "Press play to listen."; });
      } else {
        status.textContent = state.message || "The preview could not be generated.";
      }
    } catch (err) {
      status.textContent = "Network error: " + err.message;
    } finally {
      button.disabled = false;
    }
  }

  async function testEndpoint(form) {
    var result = form.parentElement.querySelector(".llm-test-result");
    var button = form.querySelector("button");
    button.disabled = true;
    result.className = "llm-test-result muted";
    result.textContent = "Connecting…";
    try {
      var resp = await fetch(form.action, {
        method: "POST",
        headers: { "X-CSRFToken": csrfToken(), "Accept": "application/json" },
      });
      var check = await resp.json();
      if (check.ok) {
        result.className = "llm-test-result ok";
        result.textContent = "Connected: first token after " + Math.round(check.first_token_ms) +
          " ms (“" + check.reply.trim() + "”).";
      } else {
        result.className = "llm-test-result error";
        result.textContent = check.error || "The endpoint did not answer.";
      }
    } catch (err) {
      result.className = "llm-test-result error";
      result.textContent = "Network error: " + err.message;
    } finally {
      button.disabled = false;
    }
  }

  // "Talk to this persona": the same widget visitors get, loaded for that persona
  // with the member's login standing in for a publishable key (data-session-url).
  // One test widget at a time: another persona's is hung up and removed first.
  function testCall(button) {
    var slug = button.dataset.persona;
    var widgets = window.voiceAgentWidgets || [];
    for (var i = widgets.length - 1; i >= 0; i--) {
      var w = widgets[i];
      if (!w.host.hasAttribute("data-test-call")) continue;
      if (w.host.getAttribute("data-voice-agent") === slug) { if (!w.call) w.start(); return; }
      if (w.call) w.hangUp();
      w.host.remove();
      widgets.splice(i, 1);
    }
    var script = document.createElement("script");
    script.src = "/static/widget/v1.js";
    script.setAttribute("data-key", "dashboard");
    script.setAttribute("data-persona", slug);
    script.setAttribute("data-session-url", button.dataset.testCall);
    script.setAttribute("data-label", "Test call");
    script.onload = function () {
      var list = window.voiceAgentWidgets || [];
      var widget = list[list.length - 1];
      if (!widget) return;
      widget.host.setAttribute("data-test-call", "");
      widget.start();
    };
    document.body.appendChild(script);
  }

  document.addEventListener("submit", function (event) {
    if (event.target.matches("[data-llm-test]")) { event.preventDefault(); testEndpoint(event.target); }
  });

  // Call page: a transcript line seeks the recording to where it starts (its mark in
  // the recording, else the time the line was written).
  var callAudio = document.getElementById("call-audio");
  var marksEl = document.getElementById("recording-marks");
  var marks = marksEl ? JSON.parse(marksEl.textContent) : {};
  if (callAudio) { callAudio.closest(".card").classList.add("has-recording"); }

  function seekTo(line) {
    var at = marks[line.dataset.item];
    if (typeof at !== "number") { at = parseFloat(line.dataset.at) || 0; }
    callAudio.currentTime = Math.max(0, at);
    callAudio.play().catch(function () {});
  }

  document.addEventListener("click", function (event) {
    var line = callAudio && event.target.closest(".transcript li[data-item]");
    if (line) { seekTo(line); return; }
    var button = event.target.closest("[data-preview-url]");
    if (button) { event.preventDefault(); preview(button); return; }
    var talk = event.target.closest("[data-test-call]");
    if (talk) { event.preventDefault(); testCall(talk); return; }
    var copy = event.target.closest("[data-copy-target]");
    if (copy) {
      var el = document.getElementById(copy.dataset.copyTarget);
      navigator.clipboard.writeText(el.textContent.trim()).then(function () {
        copy.textContent = "Copied";
        setTimeout(function () { copy.textContent = "Copy"; }, 1500);
      });
    }
  });

  document.addEventListener("submit", function (event) {
    var form = event.target.closest("form[data-confirm]");
    if (form && !window.confirm(form.dataset.confirm)) { event.preventDefault(); }
  });

  document.addEventListener("change", function (event) {
    if (event.target.matches("[data-autosubmit]")) { event.target.form.submit(); }
  });

  // Persona page: documents being processed show their progress; once none is,
  // the page is loaded again to show what came of them.
  async function watchDocuments(section) {
    var url = section.dataset.documentsStatus;
    for (var i = 0; i < 2400; i++) {
      await sleep(1500);
      var state;
      try { state = await (await fetch(url, { headers: { Accept: "application/json" } })).json(); }
      catch (err) { continue; }
      var busy = false;
      state.documents.forEach(function (d) {
        var row = section.querySelector('tr[data-document="' + d.id + '"]');
        var isBusy = d.status === "queued" || d.status === "processing";
        busy = busy || isBusy;
        if (!row || !isBusy) { return; }
        var bar = row.querySelector("progress");
        if (bar) { bar.value = d.progress; bar.textContent = d.progress + "%"; }
        var stage = row.querySelector(".document-stage");
        if (stage) { stage.textContent = d.stage; }
        var badge = row.querySelector(".badge");
        if (badge) { badge.textContent = d.status_label; }
      });
      if (!busy) { window.location.reload(); return; }
    }
  }
  var documentsSection = document.querySelector("[data-documents-status]");
  if (documentsSection) { watchDocuments(documentsSection); }
})();
