// Status page of iax-node. Read-only: it opens the node's event stream (GET events) and never
// sends a command. Every `snapshot` replaces the whole state; the other events are listed and
// patch the state until the next snapshot arrives. Durations are anchored to the moment they
// arrived (performance.now) so the page counts them on locally between snapshots.
"use strict";
(() => {
  const MAX_EVENTS = 50;
  const TICK_MS = 500;
  // EventSource retries by itself after a dropped connection; only when it gives up for good (an
  // HTTP error, a wrong content type) does the page open a new one, this long after.
  const REOPEN_MS = 2000;

  const MODES = {
    transceive: "Transceive",
    monitor: "Monitor",
    local_monitor: "Local monitor",
    connecting: "Connecting",
  };
  const LINK_STATES = { connecting: "Connecting", up: "Established", retrying: "Retrying" };
  const CALL_STATES = { setup: "Connecting", ringing: "Ringing", up: "Established" };
  const REG_STATES = {
    unregistered: "Not registered",
    registering: "Registering…",
    registered: "Registered",
    failed: "Registration failed",
  };
  const TUNNEL_STATES = { up: "up", handshaking: "handshaking (no answer yet)", down: "down" };
  const CODECS = { ulaw: "µ-law", alaw: "A-law", slin: "slin", slin16: "slin16" };
  const BEHIND = { T: "", R: " (monitor)", C: " (connecting)" };
  const COLUMNS = ["Last Recv", "Conn Time", "Direction", "Connect State", "Mode", "Codec", "Nodes behind"];

  const el = (id) => document.getElementById(id);
  const now = () => performance.now();
  const num = (v) => (typeof v === "number" && Number.isFinite(v) ? v : null);
  const since = (seconds, t) => (num(seconds) === null ? null : t - seconds * 1000);
  const word = (map, v) => (v == null ? "—" : map[v] || String(v));
  const pad = (n) => String(n).padStart(2, "0");

  let state = null;
  let live = false;
  // While disconnected the clock stands still at the moment the stream was lost: the durations
  // stay on screen, but they no longer count on, as nobody knows whether they still run.
  let lostAt = null;
  let source = null;
  let reopenTimer = null;
  // Registration failures seen as events, for snapshots that carry no `registration` object.
  let lastFailure = null;
  let failedSinceSuccess = false;

  function hms(seconds) {
    const s = Math.max(0, Math.floor(seconds));
    return `${pad(Math.floor(s / 3600))}:${pad(Math.floor(s / 60) % 60)}:${pad(s % 60)}`;
  }

  function ms(seconds) {
    const s = Math.max(0, Math.ceil(seconds));
    return `${Math.floor(s / 60)}:${pad(s % 60)}`;
  }

  function setText(node, text) {
    if (node.textContent !== text) node.textContent = text;
  }

  function fromSnapshot(s, t) {
    const tx = s.tx && typeof s.tx === "object" ? s.tx : null;
    const remaining = tx ? num(tx.timeout_remaining_s) : null;
    return {
      nodeId: s.node_id == null ? null : String(s.node_id),
      hosted: Array.isArray(s.hosted) ? s.hosted.map(String) : [],
      listening: s.listening === true,
      registered: s.registered === true,
      registration: s.registration && typeof s.registration === "object" ? { ...s.registration } : null,
      bridge: s.bridge && typeof s.bridge === "object" ? s.bridge : null,
      audio: s.audio && typeof s.audio === "object" ? s.audio : null,
      usrp: s.radio && s.radio.usrp && typeof s.radio.usrp === "object" ? s.radio.usrp : null,
      tunnel: s.tunnel && typeof s.tunnel === "object" ? s.tunnel : null,
      tx: tx && {
        keyed: tx.keyed === true,
        length: num(tx.timeout_s),
        endsAt: tx.keyed === true && remaining !== null ? t + remaining * 1000 : null,
      },
      links: (Array.isArray(s.links) ? s.links : []).map((l) => ({
        ...l,
        upAt: since(l.connected_s, t),
        recvAt: since(l.last_keyed_s, t),
      })),
      calls: (Array.isArray(s.calls) ? s.calls : []).map((c) => ({ ...c, upAt: since(c.duration_s, t) })),
      network: s.network && Array.isArray(s.network.edges) ? s.network : null,
    };
  }

  // --- events ------------------------------------------------------------------------------

  function onEvent(ev, t) {
    if (ev.event === "snapshot") {
      state = fromSnapshot(ev, t);
      if (state.registered) failedSinceSuccess = false;
      setLive(true);
    } else if (ev.event === "health") {
      // Every few seconds: fresh figures for the rows, not worth a line in the event list.
      if (state) patchHealth(ev);
    } else {
      patch(ev, t);
      listEvent(ev);
      if (ev.event === "shutdown") setLive(false);
    }
    render();
  }

  function patch(ev, t) {
    if (ev.event === "registered") {
      failedSinceSuccess = false;
      if (state) {
        state.registered = true;
        if (state.registration) state.registration.state = "registered";
      }
    } else if (ev.event === "register_failed") {
      lastFailure = ev.reason || "no reason given";
      failedSinceSuccess = true;
      if (state) {
        state.registered = false;
        if (state.registration) Object.assign(state.registration, { state: "failed", last_failure: lastFailure });
      }
    } else if (ev.event === "link" && state) {
      patchLink(ev, t);
    }
  }

  function patchHealth(ev) {
    for (const h of Array.isArray(ev.links) ? ev.links : []) {
      const link = findLink(h);
      if (link) link.health = h.health;
    }
    for (const h of Array.isArray(ev.calls) ? ev.calls : []) {
      const call = state.calls.find((c) => c.id === h.id);
      if (call) call.health = h.health;
    }
  }

  function findLink(ev) {
    return state.links.find((l) => (ev.call != null && l.call != null ? l.call === ev.call : l.node === ev.node));
  }

  function patchLink(ev, t) {
    if (ev.kind === "keyed" && ev.call == null && ev.node === state.nodeId) {
      state.tx = { ...(state.tx || { length: null }), keyed: ev.keyed === true, endsAt: null };
      if (ev.keyed === true && state.tx.length !== null) state.tx.endsAt = t + state.tx.length * 1000;
      return;
    }
    const link = findLink(ev);
    if (ev.kind === "keyed" && link) {
      link.keyed = ev.keyed === true;
      link.recvAt = t;
    } else if (ev.kind === "connected") {
      const fields = { node: ev.node, call: ev.call, mode: ev.mode, direction: ev.direction, state: "up" };
      if (link) Object.assign(link, fields);
      else state.links.push({ ...fields, keyed: false, upAt: t, recvAt: null, nodes: [] });
    } else if (ev.kind === "disconnected" && link) {
      state.links.splice(state.links.indexOf(link), 1);
    } else if ((ev.kind === "degraded" || ev.kind === "recovered") && link && link.health) {
      link.health = { ...link.health, degraded: ev.kind === "degraded", rtt_ms: ev.rtt_ms ?? link.health.rtt_ms };
    }
  }

  function describe(ev) {
    const reason = (r) => (r ? `: ${r}` : "");
    switch (ev.event) {
      case "incoming_call":
        return `Incoming call from ${ev.from || "unknown"}`;
      case "hangup":
        return `Call ended${reason(ev.reason)}`;
      case "registered":
        return "Registered";
      case "register_failed":
        return `Registration failed${reason(ev.reason)}`;
      case "dtmf": {
        // No call: tones on the local radio's receiver, or digits sent over AMI (rpt fun);
        // no digit: the inter-digit time-out.
        const where = ev.call == null ? "from the local radio or AMI" : `on call ${ev.call}`;
        const what = ev.digit ? `DTMF ${ev.digit}` : "DTMF time-out";
        return `${what} ${where}${ev.command ? ` (command ${ev.command})` : ""}`;
      }
      case "shutdown":
        return "Node shutting down";
      case "link":
        if (ev.kind === "keyed" && ev.call == null && state && ev.node === state.nodeId) {
          return ev.keyed ? "Local source keyed" : "Local source unkeyed";
        }
        if (ev.kind === "keyed") return `Link ${ev.node} ${ev.keyed ? "keyed" : "unkeyed"}`;
        if (ev.kind === "connected") {
          return `Link ${ev.node} connected (${word(MODES, ev.mode)}, ${ev.direction || "?"})`;
        }
        if (ev.kind === "disconnected") return `Link ${ev.node} disconnected${reason(ev.reason)}`;
        if (ev.kind === "degraded") return `Link ${ev.node} degraded${reason(ev.reason)}`;
        if (ev.kind === "recovered") return `Link ${ev.node} recovered${reason(ev.reason)}`;
        break;
      default:
        break;
    }
    const { event, ...rest } = ev;
    const details = Object.entries(rest).map(([k, v]) => `${k}=${typeof v === "object" ? JSON.stringify(v) : v}`);
    return [event, ...details].join(" ");
  }

  function listEvent(ev) {
    const at = new Date();
    const li = document.createElement("li");
    li.dataset.event = ev.event;
    const time = document.createElement("time");
    time.dateTime = at.toISOString();
    time.textContent = `${pad(at.getHours())}:${pad(at.getMinutes())}:${pad(at.getSeconds())}`;
    const text = document.createElement("span");
    text.textContent = describe(ev);
    li.append(time, text);
    const list = el("events");
    list.prepend(li);
    while (list.children.length > MAX_EVENTS) list.lastElementChild.remove();
    el("no-events").hidden = true;
  }

  // --- rendering ---------------------------------------------------------------------------

  function setLive(on) {
    if (live && !on) lostAt = now();
    live = on;
    const conn = el("conn");
    setText(conn, on ? "Live" : "disconnected — reconnecting…");
    conn.className = `conn ${on ? "live" : "down"}`;
    el("main").classList.toggle("stale", !on);
  }

  function txLine(s) {
    if (!live || !s) return ["unknown", "Transmit state unknown"];
    if (s.tx && s.tx.keyed) return ["local", "Transmit - Local Source"];
    if (s.links.some((l) => l.keyed === true) || s.calls.some((c) => c.keyed === true)) {
      return ["network", "Transmit - Network Source"];
    }
    return ["idle", "Idle"];
  }

  function registration(s) {
    const r = s.registration;
    if (r) {
      let text = word(REG_STATES, r.state);
      if (r.method) text += ` (${r.method === "iax2" ? "IAX2" : String(r.method).toUpperCase()})`;
      if (r.perceived_addr) text += `, seen as ${r.perceived_addr}`;
      if (r.warning) text += ` — warning: ${r.warning}`;
      return [text, r.state === "failed", r.last_failure || null];
    }
    if (s.registered) return ["Registered", false, lastFailure];
    if (failedSinceSuccess) return ["Registration failed", true, lastFailure];
    if (!s.nodeId) return ["Not configured", false, lastFailure];
    return ["Not registered", false, lastFailure];
  }

  function bridgeText(b) {
    if (!b) return "—";
    const parts = [word({ handset: "Handset", bridge: "Bridge", conference: "Conference" }, b.mode)];
    parts.push(b.mix_minus === false ? "full mix" : "mix-minus");
    if (b.include_local_radio) parts.push("local radio included");
    return parts.join(", ");
  }

  // A USRP radio's digital caller while they talk (callsign, talkgroup), from `radio.usrp`.
  function callerText(c) {
    const who = c.callsign || (num(c.source_id) ? `id ${c.source_id}` : "unknown caller");
    return num(c.talkgroup) ? `${who} on TG ${c.talkgroup}` : who;
  }

  function audioText(a, usrp) {
    if (!a) return "—";
    const parts = [a.backend === "none" ? "null backend" : String(a.backend)];
    if (usrp) {
      parts.push(String(usrp.network));
      if (usrp.dstar_guard) parts.push("D-Star guard on");
      if (usrp.caller) parts.push(`talking: ${callerText(usrp.caller)}`);
    }
    if (num(a.rate)) parts.push(`${a.rate / 1000} kHz`);
    // A card that does not take the station rate runs at 48 kHz, converted by the node; a
    // USRP stream is always 8 kHz.
    if (num(a.device_rate) && a.device_rate !== a.rate) {
      parts.push(`${usrp ? "stream" : "card"} ${a.device_rate / 1000} kHz`);
    }
    if (a.input) parts.push(`in: ${a.input}`);
    if (a.output) parts.push(`out: ${a.output}`);
    const gain = (d) => (d && typeof d === "object" ? num(d.gain_db) : null);
    const rx = gain(a.rx), tx = gain(a.tx);
    const db = (v) => `${v > 0 ? "+" : ""}${v} dB`;
    // Levels change every block: the page shows the gains (a snapshot follows each change),
    // GET /status the meters.
    if (rx || tx) parts.push(`gain rx ${db(rx || 0)}, tx ${db(tx || 0)}`);
    if (a.running === false) parts.push("stopped");
    return parts.join(", ");
  }

  // `[wireguard]`: where the node is inside the tunnel and how the tunnel stands. The snapshot
  // comes with each state change, so ages (last handshake) are left to GET /status.
  function tunnelText(w) {
    let text = `WireGuard ${word(TUNNEL_STATES, w.state)}`;
    if (w.address) text += `, ${w.address}`;
    text += w.endpoint ? ` via ${w.endpoint}` : ", waiting for the peer";
    if (num(w.dropped)) text += `, ${w.dropped} dropped`;
    return text;
  }

  function cell(label, text, cls) {
    const td = document.createElement("td");
    td.setAttribute("role", "cell");
    td.dataset.label = label;
    if (cls) td.className = cls;
    td.textContent = text;
    return td;
  }

  // One compact line of a call's or link's network health (the `health` object): round-trip
  // time, what we receive (jitter, loss, jitter-buffer depth) and what the far end says it
  // receives of ours (from its PONG's RR figures).
  function healthText(h) {
    if (!h || typeof h !== "object") return "";
    const parts = [];
    const rtt = num(h.rtt_ms);
    parts.push(`RTT ${rtt === null ? "—" : `${rtt} ms`}`);
    const rx = h.rx && typeof h.rx === "object" ? h.rx : null;
    if (rx) {
      parts.push(`in: jitter ${num(rx.jitter_ms) ?? "—"} ms, loss ${num(rx.loss_pct) ?? "—"} %, buffer ${num(rx.delay_ms) ?? "—"} ms`);
    }
    const peer = h.peer && typeof h.peer === "object" ? h.peer : null;
    if (peer) parts.push(`out: jitter ${num(peer.jitter_ms) ?? "—"} ms, loss ${num(peer.loss_pct) ?? "—"} %`);
    return (h.degraded === true ? "Degraded · " : "") + parts.join(" · ");
  }

  function row(kind, name, keyed, pending, values, health) {
    const tr = document.createElement("tr");
    tr.setAttribute("role", "row");
    tr.dataset.kind = kind;
    tr.classList.toggle("keyed", keyed);
    tr.classList.toggle("pending", pending);
    const th = document.createElement("th");
    th.scope = "row";
    th.setAttribute("role", "rowheader");
    th.textContent = name;
    const line = healthText(health);
    if (line) {
      const small = document.createElement("span");
      small.className = "health";
      small.classList.toggle("degraded", health.degraded === true);
      small.textContent = line;
      th.append(small);
    }
    tr.append(th);
    values.forEach(([text, cls, at], i) => {
      const td = cell(COLUMNS[i], text, cls);
      if (at != null) td.dataset.at = String(at);
      tr.append(td);
    });
    return tr;
  }

  function recvValue(item) {
    if (item.keyed === true) return ["Keyed now", "recv"];
    if (item.recvAt == null) return [item.kind === "call" ? "—" : "Never", "recv"];
    return ["", "recv", item.recvAt];
  }

  function linkRow(l) {
    let mode = word(MODES, l.mode);
    if (l.permanent === true) mode += " (permanent)";
    const behind = Array.isArray(l.nodes) && l.nodes.length
      ? l.nodes.map((n) => {
        const s = String(n);
        return s[0] in BEHIND ? s.slice(1) + BEHIND[s[0]] : s;
      }).join(", ")
      : "—";
    const tr = row("link", String(l.node), l.keyed === true, l.state !== "up", [
      recvValue(l),
      l.upAt == null ? ["—", "up"] : ["", "up", l.upAt],
      [l.direction === "inbound" ? "IN" : l.direction === "outbound" ? "OUT" : "—"],
      [word(LINK_STATES, l.state)],
      [mode],
      [word(CODECS, l.codec)],
      [behind, "behind"],
    ], l.health);
    tr.dataset.node = String(l.node);
    if (l.call != null) tr.dataset.call = String(l.call);
    return tr;
  }

  function callRow(c) {
    const tr = row("call", String(c.peer || "unknown"), c.keyed === true, c.state !== "up", [
      recvValue({ ...c, kind: "call", recvAt: null }),
      c.upAt == null ? ["—", "up"] : ["", "up", c.upAt],
      [c.direction === "inbound" ? "IN" : c.direction === "outbound" ? "OUT" : "—"],
      [word(CALL_STATES, c.state)],
      ["Call"],
      [word(CODECS, c.codec)],
      ["—", "behind"],
    ], c.health);
    tr.dataset.call = String(c.id);
    return tr;
  }

  // --- the network tree -------------------------------------------------------------------
  // Our links under this node, and under each link the nodes its list says stand behind it
  // (an `L` list is flat: it names no hops). A long list folds away behind a summary.
  const FOLD = 20;
  let drawnNetwork = null;

  function netItem(node, mode, extra) {
    const li = document.createElement("li");
    li.dataset.node = node;
    li.className = `net-${mode || "me"}`;
    const name = document.createElement("span");
    name.className = "net-node";
    name.textContent = node;
    li.append(name);
    if (mode || extra) {
      const m = document.createElement("span");
      m.className = "net-mode";
      m.textContent = extra || word(MODES, mode);
      li.append(" ", m);
    }
    return li;
  }

  function drawNetwork(net, me) {
    const key = JSON.stringify(net && net.edges);
    if (key === drawnNetwork) return;
    drawnNetwork = key;
    const edges = net ? net.edges : [];
    const root = netItem(me || "this node", null, me ? "this node" : null);
    const adjacent = document.createElement("ul");
    let count = 0;
    for (const e of edges) {
      if (e.adjacent !== true) continue;
      const li = netItem(String(e.to), e.mode);
      const behind = edges.filter((b) => b.adjacent !== true && b.from === e.to);
      count += 1 + behind.length;
      if (behind.length) {
        const ul = document.createElement("ul");
        ul.append(...behind.map((b) => netItem(String(b.to), b.mode)));
        if (behind.length > FOLD) {
          const fold = document.createElement("details");
          const summary = document.createElement("summary");
          summary.textContent = `${behind.length} nodes behind`;
          fold.append(summary, ul);
          li.append(fold);
        } else {
          li.append(ul);
        }
      }
      adjacent.append(li);
    }
    root.append(adjacent);
    el("net").replaceChildren(root);
    el("net").hidden = count === 0;
    el("no-net").hidden = count !== 0;
    setText(el("net-count"), count ? `(${count} nodes)` : "");
  }

  // Allmon3's order: keyed links first, then the most recently heard, then the never heard by
  // node number; calls after the links.
  function byRecent(a, b) {
    if ((a.keyed === true) !== (b.keyed === true)) return a.keyed === true ? -1 : 1;
    if ((a.recvAt == null) !== (b.recvAt == null)) return a.recvAt == null ? 1 : -1;
    if (a.recvAt != null && a.recvAt !== b.recvAt) return b.recvAt - a.recvAt;
    return String(a.node).localeCompare(String(b.node), undefined, { numeric: true });
  }

  function render() {
    const s = state;
    const id = s && s.nodeId ? s.nodeId : "—";
    setText(el("node-id"), id);
    document.title = s && s.nodeId ? `Node ${s.nodeId} status` : "Node status";

    const [txClass, txText] = txLine(s);
    const tx = el("tx");
    setText(tx, txText);
    tx.className = `tx ${txClass}`;
    if (!s) return;

    const [regText, regFailed, failure] = registration(s);
    setText(el("reg"), regText);
    el("reg").classList.toggle("reg-failed", regFailed);
    setText(el("reg-failure"), failure || "none");
    setText(el("listening"), s.listening ? "Accepting" : "Refusing");
    setText(el("bridge"), bridgeText(s.bridge));
    setText(el("audio"), audioText(s.audio, s.usrp));
    el("tunnel-fact").hidden = !s.tunnel;
    if (s.tunnel) setText(el("tunnel"), tunnelText(s.tunnel));

    const rows = [...s.links.slice().sort(byRecent).map(linkRow), ...s.calls.map(callRow)];
    el("conn-rows").replaceChildren(...rows);
    el("conns").hidden = rows.length === 0;
    el("no-conns").hidden = rows.length !== 0;
    setText(el("conn-count"), rows.length ? `(${rows.length})` : "");
    drawNetwork(s.network, s.nodeId);
    drawHosted(s.hosted, s.nodeId);
    tick();
  }

  // The other nodes of this host (a process serving several): each has its own page.
  function drawHosted(hosted, nodeId) {
    const nav = el("hosted");
    const numbers = Array.isArray(hosted) ? hosted.filter((n) => typeof n === "string") : [];
    nav.hidden = numbers.length < 2;
    nav.replaceChildren(
      ...numbers.map((n) => {
        const a = document.createElement("a");
        a.href = `/nodes/${encodeURIComponent(n)}/`;
        a.textContent = n;
        if (n === nodeId) a.setAttribute("aria-current", "page");
        return a;
      })
    );
  }

  // Shows the anchored durations as of now (or as of the moment the stream was lost).
  function tick() {
    if (!state) return;
    const t = live || lostAt === null ? now() : lostAt;
    for (const td of el("conn-rows").querySelectorAll("td[data-at]")) {
      setText(td, hms((t - Number(td.dataset.at)) / 1000));
    }
    const tot = el("tot");
    const tx = state.tx;
    tot.hidden = !tx || tx.length === null;
    if (tx && tx.keyed && tx.endsAt !== null) setText(tot, `Time-out timer: ${ms((tx.endsAt - t) / 1000)} left`);
    else if (tx && tx.length !== null) setText(tot, `Time-out timer: ${ms(tx.length)}`);
  }

  // --- the stream --------------------------------------------------------------------------

  function open() {
    reopenTimer = null;
    if (source) source.close();
    source = new EventSource("events");
    source.onmessage = (message) => {
      let ev;
      try {
        ev = JSON.parse(message.data);
      } catch (e) {
        return;
      }
      if (ev && typeof ev.event === "string") onEvent(ev, now());
    };
    source.onerror = () => {
      setLive(false);
      render();
      if (source.readyState === EventSource.CLOSED && reopenTimer === null) {
        reopenTimer = setTimeout(open, REOPEN_MS);
      }
    };
  }

  open();
  setInterval(tick, TICK_MS);
})();
