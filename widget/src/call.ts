/**
 * The widget's call button (widget settings `voice_enabled`): the visitor talks to the agent in
 * the browser. Pressing it asks for the microphone (a refusal is explained in words), starts a web
 * call (`POST /widget/{id}/calls`), and speaks the voice runtime's JSON protocol (docs/api.md,
 * "Web calls") over a WebSocket in PCM16 at 24 kHz. The AudioContext runs at the browser's own
 * rate (Firefox refuses a microphone on a context of another rate): an AudioWorklet resamples the
 * microphone to 24 kHz as it is captured (resample.ts), and the agent's 24 kHz audio is resampled
 * to the context's rate and played in order; a `clear` (the visitor cut in) stops what is queued.
 * The head shows who is speaking and a hang-up button; the log shows the transcript as it happens.
 * Every failure is told in words and ends the call (server-side too); a hang-up at any moment,
 * "Connecting…" included, ends everything: a call the server made meanwhile is admitted and hung
 * up at once, so none is left open. Without a speech model the start fails at once with the
 * server's message, which names the setting.
 *
 * `window.VoiceAgentWidget.call` exposes the call's counters (audio bytes sent and played, the
 * state), for tests and for pages that want to show them.
 */
import { el, icon } from './dom';
import { createResampler, fromPcm16 } from './resample';

export interface CallStats {
  state: 'idle' | 'starting' | 'live' | 'ended';
  /** Microphone audio sent (PCM16 bytes). */
  sentBytes: number;
  /** Agent audio received and scheduled to play (PCM16 bytes). */
  playedBytes: number;
  /** `clear` messages obeyed. */
  clears: number;
  /** Why the last call ended (`ended.reason`), or the error shown. */
  ended?: string;
  /** The AudioContext's sample rate (the microphone is captured at it and resampled to 24 kHz). */
  contextRate?: number;
}

export interface CallUi {
  /** The widget's shadow root, for the call's styles. */
  shadow: ShadowRoot;
  head: HTMLElement;
  /** The head's close button: the call button goes before it. */
  closer: HTMLElement;
  log: HTMLElement;
  /** Kept last in the log (the typing dots). */
  typing: HTMLElement;
  agentName: string;
  language: string;
  color: string;
  onColor: string;
  showNotice(text: string): void;
  clearNotice(): void;
  /** POST /widget/{id}/calls; rejects with the API's message. */
  start(): Promise<{ call_id: string; url: string; token: string }>;
  /** Where the counters are published (window.VoiceAgentWidget). */
  g: { call?: CallStats };
}

const ICON_PHONE = 'M6.6 10.8a15.1 15.1 0 0 0 6.6 6.6l2.2-2.2a1 1 0 0 1 1-.25 11.4 11.4 0 0 0 3.6.57 1 1 0 0 1 1 1V20a1 1 0 0 1-1 1A17 17 0 0 1 3 4a1 1 0 0 1 1-1h3.5a1 1 0 0 1 1 1c0 1.25.2 2.45.57 3.6a1 1 0 0 1-.25 1z';
const ICON_HANGUP = 'M12 9c-1.6 0-3.15.25-4.6.72v3.1a1 1 0 0 1-.56.9 11.5 11.5 0 0 0-2.66 1.85 1 1 0 0 1-1.41 0L.29 13.1a1 1 0 0 1 0-1.41A16.9 16.9 0 0 1 12 7a16.9 16.9 0 0 1 11.71 4.69 1 1 0 0 1 0 1.41l-2.48 2.48a1 1 0 0 1-1.41 0 11.3 11.3 0 0 0-2.67-1.85 1 1 0 0 1-.56-.9v-3.1A15 15 0 0 0 12 9z';
const RATE = 24000;
/** Microphone audio per message: 80 ms at 24 kHz. */
const CHUNK = 1920;

/** The capture worklet: the microphone at the context's rate (`sampleRate`) → PCM16 24 kHz chunks posted to the page. */
const WORKLET = `const createResampler = ${createResampler.toString()};
class Capture extends AudioWorkletProcessor {
  constructor(o) {
    super();
    this.r = createResampler(sampleRate, o.processorOptions.rate);
    this.chunk = o.processorOptions.chunk;
    this.buf = new Int16Array(this.chunk);
    this.n = 0;
    this.port.onmessage = () => { this.stopped = true; };
  }
  process(inputs) {
    if (this.stopped) return false;
    const ch = inputs[0] && inputs[0][0];
    if (!ch) return true;
    const out = this.r.push(ch);
    for (let i = 0; i < out.length; i++) {
      const v = Math.round(out[i] * 32767);
      this.buf[this.n++] = v > 32767 ? 32767 : v < -32768 ? -32768 : v;
      if (this.n === this.chunk) {
        this.port.postMessage(this.buf.buffer, [this.buf.buffer]);
        this.buf = new Int16Array(this.chunk);
        this.n = 0;
      }
    }
    return true;
  }
}
registerProcessor('vap-capture', Capture);`;

const en = {
  call: 'Call',
  hangUp: 'Hang up',
  connecting: 'Connecting…',
  listening: 'Listening',
  agentSpeaking: '{a} is speaking',
  youSpeaking: 'You are speaking',
  ended: 'Call ended.',
  micRefused: 'The microphone was not allowed, so the call cannot start. To talk to {a}, allow the microphone for this site (the icon in the address bar), then press the call button again.',
  micMissing: 'No microphone was found. Connect one and press the call button again.',
  micInsecure: 'Calls need a secure page (https) with microphone access; this page cannot use the microphone.',
  failed: 'The call could not start: {m}',
  lost: 'The call was cut off: {m}',
  micFailed: 'The microphone could not be used in this browser, so the call was ended: {m}',
};
type Text = typeof en;
const others: Record<string, Partial<Text>> = {
  fr: { call: 'Appeler', hangUp: 'Raccrocher', connecting: 'Connexion…', listening: 'À l\'écoute', agentSpeaking: '{a} parle', youSpeaking: 'Vous parlez', ended: 'Appel terminé.',
    micRefused: 'Le micro n\'a pas été autorisé : l\'appel ne peut pas commencer. Pour parler à {a}, autorisez le micro pour ce site (icône de la barre d\'adresse), puis appuyez à nouveau sur le bouton d\'appel.' },
  es: { call: 'Llamar', hangUp: 'Colgar', connecting: 'Conectando…', listening: 'Escuchando', agentSpeaking: '{a} está hablando', youSpeaking: 'Está hablando', ended: 'Llamada terminada.',
    micRefused: 'No se permitió el micrófono, así que la llamada no puede empezar. Para hablar con {a}, permita el micrófono para este sitio (el icono de la barra de direcciones) y pulse de nuevo el botón de llamada.' },
  de: { call: 'Anrufen', hangUp: 'Auflegen', connecting: 'Verbinde…', listening: 'Hört zu', agentSpeaking: '{a} spricht', youSpeaking: 'Sie sprechen', ended: 'Anruf beendet.',
    micRefused: 'Das Mikrofon wurde nicht erlaubt, daher kann der Anruf nicht beginnen. Um mit {a} zu sprechen, erlauben Sie das Mikrofon für diese Seite (Symbol in der Adressleiste) und drücken Sie erneut auf Anrufen.' },
};

function toBase64(bytes: Uint8Array): string {
  let s = '';
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode.apply(null, Array.from(bytes.subarray(i, i + 0x8000)));
  return btoa(s);
}

function fromBase64(b64: string): Uint8Array {
  const s = atob(b64);
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}

/** Adds the call button to the widget's head; returns nothing (the call lives in the panel). */
export function mountCall(ui: CallUi): void {
  const t: Text = { ...en, ...others[(ui.language || 'en').toLowerCase().split('-')[0]!] };
  const fill = (s: string, m = '') => s.replace('{a}', ui.agentName).replace('{m}', m);
  const style = el('style');
  style.textContent = `
.callbtn{display:flex;align-items:center;justify-content:center;width:32px;height:32px;border-radius:8px;background:none;cursor:pointer}
.callbtn svg{width:18px;height:18px;fill:${ui.onColor};display:block}
.callbtn:focus-visible,.hangup:focus-visible{outline:3px solid ${ui.onColor};outline-offset:2px}
.callbar{display:flex;align-items:center;gap:8px;padding:8px 12px;background:#f1f5f9;border-bottom:1px solid #e2e8f0}
.callbar[hidden]{display:none}
.callstate{flex:1;font-size:13px;color:#0f172a}
.hangup{display:flex;align-items:center;gap:6px;padding:6px 10px;border-radius:8px;background:#b91c1c;color:#fff;font-size:13px;font-weight:600;cursor:pointer}
.hangup svg{width:16px;height:16px;fill:#fff;display:block}
.msg.live{opacity:.75}`;
  ui.shadow.appendChild(style);
  const button = el('button', 'callbtn', { type: 'button', 'aria-label': `${t.call} ${ui.agentName}` });
  button.appendChild(icon(ICON_PHONE));
  ui.head.insertBefore(button, ui.closer);
  const bar = el('div', 'callbar', { hidden: '' });
  const state = el('span', 'callstate', { role: 'status', 'aria-live': 'polite' });
  const hangup = el('button', 'hangup', { type: 'button' });
  hangup.append(icon(ICON_HANGUP), el('span', undefined, {}, t.hangUp));
  bar.append(state, hangup);
  ui.head.after(bar);

  const stats: CallStats = { state: 'idle', sentBytes: 0, playedBytes: 0, clears: 0 };
  ui.g.call = stats;

  let ws: WebSocket | undefined;
  let ctx: AudioContext | undefined;
  let mic: MediaStream | undefined;
  let capture: AudioWorkletNode | undefined;
  let playback: ReturnType<typeof createResampler> | undefined;
  /** Counts starts: a hang-up during "Connecting…" moves it on, so the start's later steps know they are stale. */
  let attempt = 0;
  let playAt = 0;
  const playing = new Set<AudioBufferSourceNode>();
  const bubbles = new Map<string, HTMLElement>();
  let who = { agent: false, user: false };

  const show = () => {
    state.textContent = stats.state === 'starting' ? t.connecting : who.user ? t.youSpeaking : who.agent ? fill(t.agentSpeaking) : t.listening;
  };

  function line(role: 'agent' | 'user', id: string, text: string, final: boolean): void {
    // One key for a turn's bubble, whether it grows, settles or is dropped.
    const key = `${role}:${id}`;
    if (!text.trim() && final) {
      bubbles.get(key)?.remove();
      bubbles.delete(key);
      return;
    }
    let b = bubbles.get(key);
    if (!b) {
      b = el('div', `msg ${role} live`);
      bubbles.set(key, b);
      ui.log.insertBefore(b, ui.typing);
    }
    b.textContent = text;
    b.classList.toggle('live', !final);
    ui.log.scrollTop = ui.log.scrollHeight;
  }

  function stopPlaying(): void {
    for (const s of playing) {
      try {
        s.stop();
      } catch {
        /* not started */
      }
    }
    playing.clear();
    playAt = 0;
    playback?.reset();
  }

  function play(b64: string): void {
    if (!ctx) return;
    const bytes = fromBase64(b64);
    // The agent's 24 kHz, resampled to the context's own rate.
    playback ??= createResampler(RATE, ctx.sampleRate);
    const samples = playback.push(fromPcm16(bytes));
    if (!samples.length) return;
    const buffer = ctx.createBuffer(1, samples.length, ctx.sampleRate);
    buffer.getChannelData(0).set(samples);
    const source = ctx.createBufferSource();
    source.buffer = buffer;
    source.connect(ctx.destination);
    playAt = Math.max(playAt, ctx.currentTime + 0.02);
    source.start(playAt);
    playAt += buffer.duration;
    playing.add(source);
    source.onended = () => playing.delete(source);
    stats.playedBytes += bytes.length;
  }

  function teardown(): void {
    stopPlaying();
    capture?.port.postMessage('stop');
    capture?.disconnect();
    capture = undefined;
    playback = undefined;
    mic?.getTracks().forEach((track) => track.stop());
    mic = undefined;
    void ctx?.close().catch(() => undefined);
    ctx = undefined;
    ws = undefined;
    who = { agent: false, user: false };
    bar.hidden = true;
    button.hidden = false;
  }

  function end(reason: string, notice?: string): void {
    if (stats.state === 'ended' || stats.state === 'idle') return;
    stats.state = 'ended';
    stats.ended = reason;
    teardown();
    if (notice) ui.showNotice(notice);
    else ui.log.insertBefore(el('div', 'msg agent', { role: 'note' }, t.ended), ui.typing);
  }

  async function microphone(): Promise<MediaStream | undefined> {
    if (!navigator.mediaDevices?.getUserMedia) {
      ui.showNotice(t.micInsecure);
      return undefined;
    }
    try {
      return await navigator.mediaDevices.getUserMedia({ audio: { channelCount: 1, echoCancellation: true, noiseSuppression: true } });
    } catch (err) {
      const name = (err as DOMException)?.name;
      ui.showNotice(name === 'NotFoundError' || name === 'OverconstrainedError' ? t.micMissing : name === 'SecurityError' ? t.micInsecure : fill(t.micRefused));
      return undefined;
    }
  }

  /**
   * A socket the page no longer follows (a hang-up came while it was connecting): it is admitted
   * and hung up at once, so the call the server made ends now rather than wait for the sweep.
   */
  function retire(socket: WebSocket): void {
    socket.onmessage = (ev) => {
      const type = parse(ev.data)?.type;
      if (type === 'started') socket.send(JSON.stringify({ type: 'hangup' }));
      if (type === 'ended') socket.close(1000);
    };
    socket.onclose = null;
    socket.onerror = null;
  }

  /** Admits a call made after the visitor hung up, and hangs it up. */
  function abandon(started: { url: string; token: string }): void {
    const socket = new WebSocket(started.url);
    socket.onopen = () => socket.send(JSON.stringify({ type: 'start', token: started.token, format: 'pcm16' }));
    retire(socket);
  }

  const parse = (data: unknown): any => {
    try {
      return JSON.parse(String(data));
    } catch {
      return undefined;
    }
  };

  async function start(): Promise<void> {
    if (stats.state === 'starting' || stats.state === 'live') return;
    const mine = ++attempt;
    ui.clearNotice();
    // Made in the click (a user gesture), so the browser lets it play; at the browser's own rate.
    ctx = new AudioContext();
    stats.contextRate = ctx.sampleRate;
    stats.state = 'starting';
    stats.ended = undefined;
    button.hidden = true;
    bar.hidden = false;
    show();
    const got = await microphone();
    if (mine !== attempt) {
      // Hung up while the browser asked for the microphone: everything is already let go.
      got?.getTracks().forEach((track) => track.stop());
      return;
    }
    mic = got;
    if (!mic) {
      stats.state = 'idle';
      return teardown();
    }
    let started: { url: string; token: string };
    try {
      started = await ui.start();
    } catch (err) {
      if (mine !== attempt) return;
      return end('failed', fill(t.failed, String((err as Error)?.message ?? err)));
    }
    if (mine !== attempt) return abandon(started);
    const socket = new WebSocket(started.url);
    ws = socket;
    socket.onopen = () => socket.send(JSON.stringify({ type: 'start', token: started.token, format: 'pcm16' }));
    socket.onmessage = (ev) => {
      const m = parse(ev.data);
      if (!m || ws !== socket) return;
      switch (m.type) {
        case 'started':
          stats.state = 'live';
          void listen(socket).catch((err: unknown) => fail(socket, String((err as Error)?.message ?? err)));
          break;
        case 'audio':
          play(m.audio);
          break;
        case 'clear':
          stats.clears++;
          stopPlaying();
          break;
        case 'speaking':
          who = { ...who, [m.role]: !!m.active };
          break;
        case 'transcript':
          line(m.role === 'user' ? 'user' : 'agent', String(m.id ?? ''), String(m.text ?? ''), !!m.final);
          break;
        case 'error':
          stats.ended = String(m.message);
          ui.showNotice(fill(t.lost, String(m.message)));
          break;
        case 'ended':
          end(String(m.reason));
          break;
      }
      show();
    };
    socket.onclose = (ev) => {
      if (ws === socket) end(ev.code === 1000 ? 'closed' : 'failed', ev.code === 1000 || stats.ended ? undefined : fill(t.lost, ev.reason || `connection closed (${ev.code})`));
    };
  }

  /** A failure once the call is live: told in words, and the call ended on the server too (hung up). */
  function fail(socket: WebSocket, message: string): void {
    if (ws !== socket) return;
    if (socket.readyState === WebSocket.OPEN) {
      retire(socket);
      socket.send(JSON.stringify({ type: 'hangup' }));
    } else socket.close();
    end('failed', fill(t.micFailed, message));
  }

  /** The microphone, at the context's own rate, resampled to PCM16 24 kHz in an AudioWorklet and sent in 80 ms messages. */
  async function listen(socket: WebSocket): Promise<void> {
    const audio = ctx;
    if (!audio || !mic) return;
    const url = URL.createObjectURL(new Blob([WORKLET], { type: 'text/javascript' }));
    try {
      await audio.audioWorklet.addModule(url);
    } finally {
      URL.revokeObjectURL(url);
    }
    if (ws !== socket || ctx !== audio) return;
    const source = audio.createMediaStreamSource(mic);
    const node = new AudioWorkletNode(audio, 'vap-capture', { numberOfInputs: 1, numberOfOutputs: 0, processorOptions: { rate: RATE, chunk: CHUNK } });
    node.port.onmessage = (ev) => {
      if (ws !== socket || socket.readyState !== WebSocket.OPEN) return;
      const bytes = new Uint8Array(ev.data as ArrayBuffer);
      socket.send(JSON.stringify({ type: 'audio', audio: toBase64(bytes) }));
      stats.sentBytes += bytes.length;
    };
    source.connect(node);
    capture = node;
  }

  button.onclick = () => void start();
  hangup.onclick = () => {
    const socket = ws;
    if (stats.state === 'live' && socket?.readyState === WebSocket.OPEN) {
      socket.send(JSON.stringify({ type: 'hangup' }));
      return;
    }
    // "Connecting…": the start's later steps are stale from now on; a socket already open is
    // admitted and hung up in the background; the page is let go at once.
    attempt++;
    if (socket) retire(socket);
    end('client_hangup');
  };
}
