/**
 * Voice runtime benchmark: the relay's own cost, in one process, with a stand-in Realtime model
 * and stand-in Twilio media streams on loopback WebSockets.
 *
 *  - latency per relayed frame, each direction: a 20 ms μ-law frame stamped with a counter is sent
 *    by the carrier (→ model) or the model (→ carrier) and timed until the other side receives it;
 *    "added" is that time minus the same hop made directly between the two stand-ins (one socket
 *    instead of two, no session), measured interleaved in the same run;
 *  - CPU time per call-second: CALLS concurrent calls streaming both ways in real time (50 frames
 *    a second each way), the whole process's CPU (runtime and both stand-ins) over the wall time:
 *    the calls one vCPU carries is a lower bound for the relay alone; measured with the agents'
 *    ambient sound off, then on (`office` at 0.5);
 *  - web calls (voice/browser-transport.ts, `/web`): the same latency and CPU figures for browsers
 *    speaking the JSON protocol in PCM16 at 24 kHz (20 ms = 960 bytes a frame), relayed untouched
 *    to a model session in `audio/pcm`, with the transport's playback clock standing in for marks;
 *  - ambient sound per frame (voice/ambient.ts): 10,000 agent frames relayed as today (parse the
 *    delta, write the carrier's message) against the same with the bed mixed in, and a bed frame.
 *
 *   npx tsx bench/voice.ts      prints the markdown section
 *   import { voiceBenchmark }   returns it (npm run bench writes docs/benchmarks.md)
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocket, WebSocketServer } from 'ws';
import { AmbientMixer, AmbientPacer, FRAME_BYTES, preloadAmbientBeds } from '../voice/ambient';

const FRAME = 160; // 20 ms of μ-law at 8 kHz
const LATENCY_FRAMES = Number(process.env.BENCH_VOICE_FRAMES ?? 1500);
const CALLS = Number(process.env.BENCH_VOICE_CALLS ?? 50);
const LOAD_SECONDS = Number(process.env.BENCH_VOICE_SECONDS ?? 10);

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;
const median = (xs: number[]) => pct(xs, 50);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const WEB_FRAME = 960; // 20 ms of PCM16 at 24 kHz

/** A frame whose first 4 bytes are its number (the rest: silence); `bytes`: μ-law's 160 by default. */
function frame(n: number, bytes = FRAME): string {
  const b = Buffer.alloc(bytes, bytes === FRAME ? 0xff : 0);
  b.writeUInt32BE(n, 0);
  return b.toString('base64');
}
const numberOf = (b64: string) => Buffer.from(b64.slice(0, 8), 'base64').readUInt32BE(0);

interface ModelSide {
  url: string;
  /** Called for each appended frame: its number. */
  onAudio: (call: string, n: number) => void;
  sockets: Map<string, WebSocket>;
  close(): Promise<void>;
}

/** The stand-in model: configures nothing, answers nothing; it receives audio and sends audio when told. */
async function standInModel(): Promise<ModelSide> {
  const http = createServer();
  const wss = new WebSocketServer({ server: http, perMessageDeflate: false });
  const side: ModelSide = { url: '', onAudio: () => {}, sockets: new Map(), close: async () => {} };
  wss.on('connection', (ws, req) => {
    const call = new URL(req.url!, 'http://x').searchParams.get('model')!;
    side.sockets.set(call, ws);
    ws.on('message', (data) => {
      const text = data.toString();
      if (text.startsWith('{"type":"input_audio_buffer.append"')) side.onAudio(call, numberOf(JSON.parse(text).audio));
    });
  });
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
  side.url = `ws://127.0.0.1:${(http.address() as AddressInfo).port}/v1/realtime`;
  side.close = async () => {
    for (const c of wss.clients) c.terminate();
    await new Promise<void>((r) => http.close(() => r()));
  };
  return side;
}

/** The runtime's server, with sessions built from a synthetic call (no admission, no store: the relay alone). */
async function relay(modelUrl: string) {
  const { CallSession } = await import('../voice/session');
  const { TwilioTransport, parseTwilioFrame } = await import('../voice/twilio-transport');
  const { voiceSettings } = await import('../voice/config');
  const { BrowserTransport, parseBrowserMessage } = await import('../voice/browser-transport');
  const contextFor = (callId: string) => {
    const ambient = callId.startsWith('amb') ? { ambient_sound: 'office', ambient_sound_volume: 0.5 } : { ambient_sound: '', ambient_sound_volume: 0.5 };
    const agent = { ...ambient, s2s_model: callId, voice_id: '', temperature: 0.8, start_speaker: 'user', reminder_trigger_ms: 0, reminder_max_count: 0, max_call_duration_ms: 0, selected_tools: [], name: 'bench', agent_name: '' };
    const call = { id: callId, organization_id: 'bench', agent_id: 'a', channel: 'web', max_call_duration_ms: 0, ring_duration_ms: 30_000 };
    return { call, agent, contact: undefined, knowledgeBaseId: null, instructions: '', beginMessage: '', voicemailMessage: '', conversation: { type: 'call', id: callId, organization_id: 'bench', agent_id: 'a', contact_id: null, dynamic_variables: {}, metadata: {} } };
  };
  /** A browser on `/web`: the protocol's `start` (its token is the call id here: no admission, no store), then audio. */
  const browser = (ws: WebSocket) => {
    const line = new BrowserTransport(ws);
    let session: InstanceType<typeof CallSession> | undefined;
    ws.on('message', (data, binary) => {
      const m = parseBrowserMessage(data, binary);
      if ('error' in m) return ws.close(1008);
      if (m.type === 'start') {
        line.format = m.format;
        session = new CallSession({ carrier: line, audioFormat: m.format, observer: line, context: contextFor(m.token) as never, settings: { ...voiceSettings(), realtimeBaseUrl: modelUrl }, startMs: Date.now() });
        const s = session;
        line.onMark = (name) => s.onCarrierFrame({ event: 'mark', mark: { name } });
        void s.start();
      } else if (m.type === 'audio') session?.onCarrierFrame({ event: 'media', media: { payload: m.audio } });
    });
  };
  const http = createServer();
  const wss = new WebSocketServer({ server: http, perMessageDeflate: false, maxPayload: 64 * 1024 });
  wss.on('connection', (ws, req) => {
    if (req.url?.startsWith('/web')) return browser(ws);
    const carrier = new TwilioTransport(ws);
    let session: InstanceType<typeof CallSession> | undefined;
    ws.on('message', (data, binary) => {
      const f = parseTwilioFrame(data, binary);
      if (!f) return ws.close(1008);
      if (f.event === 'start') {
        carrier.streamSid = f.streamSid;
        const callId = f.start.customParameters.call_id!;
        const ambient = callId.startsWith('amb') ? { ambient_sound: 'office', ambient_sound_volume: 0.5 } : { ambient_sound: '', ambient_sound_volume: 0.5 };
        const agent = { ...ambient, s2s_model: callId, voice_id: '', temperature: 0.8, start_speaker: 'user', reminder_trigger_ms: 0, reminder_max_count: 0, max_call_duration_ms: 0, selected_tools: [], name: 'bench', agent_name: '' };
        const call = { id: callId, organization_id: 'bench', agent_id: 'a', max_call_duration_ms: 0, ring_duration_ms: 30_000 };
        const context = { call, agent, contact: undefined, knowledgeBaseId: null, instructions: '', beginMessage: '', voicemailMessage: '', conversation: { type: 'call', id: callId, organization_id: 'bench', agent_id: 'a', contact_id: null, dynamic_variables: {}, metadata: {} } };
        session = new CallSession({ carrier, context: context as never, settings: { ...voiceSettings(), realtimeBaseUrl: modelUrl }, startMs: Date.now() });
        void session.start();
        return;
      }
      session?.onCarrierFrame(f);
    });
  });
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
  return {
    url: `ws://127.0.0.1:${(http.address() as AddressInfo).port}/stream`,
    close: async () => {
      for (const c of wss.clients) c.terminate();
      await new Promise<void>((r) => http.close(() => r()));
    },
  };
}

/** A browser on the runtime's `/web` for `callId`, in PCM16 24 kHz. */
async function browserStream(url: string, callId: string, onMedia: (n: number) => void, onPayload?: (payload: string) => void): Promise<WebSocket> {
  const ws = new WebSocket(url.replace(/\/stream$/, '/web'), { perMessageDeflate: false });
  await new Promise((r, j) => (ws.once('open', r), ws.once('error', j)));
  ws.on('message', (data) => {
    const text = data.toString();
    if (!text.startsWith('{"type":"audio"')) return;
    const payload = JSON.parse(text).audio as string;
    onPayload ? onPayload(payload) : onMedia(numberOf(payload));
  });
  ws.send(JSON.stringify({ type: 'start', token: callId, format: 'pcm16' }));
  return ws;
}

/** A stand-in Twilio stream connected to `url` for `callId`. */
async function carrierStream(url: string, callId: string, onMedia: (n: number) => void, onPayload?: (payload: string) => void): Promise<WebSocket> {
  const ws = new WebSocket(url, { perMessageDeflate: false });
  await new Promise((r, j) => (ws.once('open', r), ws.once('error', j)));
  ws.on('message', (data) => {
    const m = JSON.parse(data.toString());
    if (m.event === 'media') onPayload ? onPayload(m.media.payload) : onMedia(numberOf(m.media.payload));
    else if (m.event === 'mark') ws.send(JSON.stringify({ event: 'mark', streamSid: m.streamSid, mark: m.mark }));
  });
  ws.send(JSON.stringify({ event: 'start', streamSid: `MZ${callId}`, start: { streamSid: `MZ${callId}`, callSid: `CA${callId}`, customParameters: { call_id: callId } } }));
  return ws;
}

const media = (n: number) => `{"event":"media","streamSid":"MZ","media":{"track":"inbound","payload":"${frame(n)}"}}`;
const delta = (n: number, bytes = FRAME) => JSON.stringify({ type: 'response.output_audio.delta', response_id: 'r', item_id: 'i', delta: frame(n, bytes) });
const webAudio = (n: number) => `{"type":"audio","audio":"${frame(n, WEB_FRAME)}"}`;

/** CALLS calls streaming both ways in real time for LOAD_SECONDS; call ids start with `tag` (`amb…`: the agent has ambient sound). */
async function cpuLoad(runtimeUrl: string, model: ModelSide, tag: string, web = false) {
  const streams: WebSocket[] = [];
  let relayed = 0;
  let mixed = false;
  model.onAudio = () => relayed++;
  // A frame the stand-in model sends is a stamp and silence: any other byte after the stamp is the bed mixed in.
  const onMedia = (payload: string) => {
    relayed++;
    if (!mixed && Buffer.from(payload, 'base64').subarray(4).some((b) => b !== 0xff)) mixed = true;
  };
  for (let c = 0; c < CALLS; c++) streams.push(await (web ? browserStream : carrierStream)(runtimeUrl, `${tag}${c}`, () => {}, onMedia));
  while (Array.from({ length: CALLS }, (_, c) => model.sockets.has(`${tag}${c}`)).includes(false)) await sleep(5);
  for (let c = 0; c < CALLS; c++) model.sockets.get(`${tag}${c}`)!.send(JSON.stringify({ type: 'response.created', response: { id: 'r' } }));
  await sleep(200);
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const expected = CALLS * 2 * 50 * LOAD_SECONDS;
  for (let tick = 0; tick < 50 * LOAD_SECONDS; tick++) {
    const due = t0 + tick * 20;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    for (let c = 0; c < CALLS; c++) {
      streams[c]!.send(web ? webAudio(tick) : media(tick));
      model.sockets.get(`${tag}${c}`)!.send(web ? delta(tick, WEB_FRAME) : delta(tick));
    }
  }
  await sleep(200);
  const wallSec = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const cpuSec = (cpu.user + cpu.system) / 1e6;
  const callSeconds = CALLS * wallSec;
  const cpuMsPerCallSecond = (cpuSec * 1000) / callSeconds;
  for (const s of streams) s.close();
  return { cpuMsPerCallSecond, callsPerVcpu: Math.floor(1000 / cpuMsPerCallSecond), wallSec, cpuSec, callSeconds, relayed, expected, mixed };
}

/** Per-frame cost of ambient sound: an agent frame relayed as today, the same with the bed mixed in, and a bed frame alone. */
function ambientFrameCost() {
  const t = performance.now();
  preloadAmbientBeds();
  const preloadMs = performance.now() - t;
  const frames = 10_000;
  // Real-looking agent audio: a different 20 ms of a tone in every frame.
  const deltas = Array.from({ length: 50 }, (_, k) => {
    const b = Buffer.alloc(FRAME_BYTES);
    for (let i = 0; i < FRAME_BYTES; i++) b[i] = (Math.round(127 + 100 * Math.sin((k * FRAME_BYTES + i) / 5)) & 0xff) | 0;
    return JSON.stringify({ type: 'response.output_audio.delta', response_id: 'r', item_id: 'i', delta: b.toString('base64') });
  });
  const message = (payload: string) => `{"event":"media","streamSid":"MZ1","media":{"payload":${JSON.stringify(payload)}}}`;
  let sink = 0;
  const pacer = new AmbientPacer({ mixer: new AmbientMixer('office', 0.5), send: () => {}, now: () => 0 });
  const bedMixer = new AmbientMixer('cafe', 0.5);
  const time = (fn: (i: number) => string) => {
    for (let i = 0; i < 2000; i++) sink += fn(i).length; // warm up
    let best = Infinity;
    for (let round = 0; round < 5; round++) {
      const t0 = performance.now();
      for (let i = 0; i < frames; i++) sink += fn(i).length;
      best = Math.min(best, ((performance.now() - t0) * 1000) / frames);
    }
    return best;
  };
  const passUs = time((i) => message(JSON.parse(deltas[i % 50]!).delta));
  const mixUs = time((i) => message(pacer.agent(JSON.parse(deltas[i % 50]!).delta)));
  const bedUs = time(() => message(bedMixer.bedPayload(FRAME_BYTES)));
  if (sink < 0) console.log(sink);
  return { frames, passUs, mixUs, bedUs, preloadMs };
}

export async function voiceBenchmark(): Promise<string> {
  process.env.LOG_LEVEL = 'SILENT';
  process.env.POWERTOOLS_LOG_LEVEL = 'SILENT';
  // The session writes the call when it ends: no store here, so point it at nothing (the write fails, logged, after measuring).
  process.env.DYNAMODB_ENDPOINT ??= 'http://127.0.0.1:9';
  const model = await standInModel();
  const runtime = await relay(model.url);

  // ---- latency, one call, both directions, interleaved with the direct hop ----
  const sentAt = new Map<string, number>();
  const up: number[] = [];
  const down: number[] = [];
  const direct: number[] = [];
  model.onAudio = (_call, n) => up.push(performance.now() - sentAt.get(`u${n}`)!);
  const carrier = await carrierStream(runtime.url, 'lat', (n) => down.push(performance.now() - sentAt.get(`d${n}`)!));
  while (!model.sockets.has('lat')) await sleep(5);
  const modelSocket = model.sockets.get('lat')!;
  modelSocket.send(JSON.stringify({ type: 'response.created', response: { id: 'r' } }));
  // The direct hop: one loopback socket carrying the same frame, no session.
  const echo = new WebSocketServer({ port: 0, host: '127.0.0.1', perMessageDeflate: false });
  await new Promise((r) => echo.once('listening', r));
  echo.on('connection', (ws) => ws.on('message', (d) => direct.push(performance.now() - sentAt.get(`x${numberOf(JSON.parse(d.toString()).media.payload)}`)!)));
  const directWs = new WebSocket(`ws://127.0.0.1:${(echo.address() as AddressInfo).port}`, { perMessageDeflate: false });
  await new Promise((r) => directWs.once('open', r));
  await sleep(200);
  for (let n = 1; n <= LATENCY_FRAMES; n++) {
    sentAt.set(`u${n}`, performance.now());
    carrier.send(media(n));
    sentAt.set(`d${n}`, performance.now());
    modelSocket.send(delta(n));
    sentAt.set(`x${n}`, performance.now());
    directWs.send(media(n));
    await sleep(n % 2 ? 1 : 2);
  }
  await sleep(300);
  carrier.close();
  directWs.close();
  echo.close();

  // ---- the same for a browser's web call (PCM16 24 kHz over /web), interleaved with its own direct hop ----
  const webUp: number[] = [];
  const webDown: number[] = [];
  const webDirect: number[] = [];
  model.onAudio = (_call, n) => webUp.push(performance.now() - sentAt.get(`wu${n}`)!);
  const web = await browserStream(runtime.url, 'weblat', (n) => webDown.push(performance.now() - sentAt.get(`wd${n}`)!));
  while (!model.sockets.has('weblat')) await sleep(5);
  const webModel = model.sockets.get('weblat')!;
  webModel.send(JSON.stringify({ type: 'response.created', response: { id: 'r' } }));
  const echo2 = new WebSocketServer({ port: 0, host: '127.0.0.1', perMessageDeflate: false });
  await new Promise((r) => echo2.once('listening', r));
  echo2.on('connection', (ws) => ws.on('message', (d) => webDirect.push(performance.now() - sentAt.get(`wx${numberOf(JSON.parse(d.toString()).audio)}`)!)));
  const webDirectWs = new WebSocket(`ws://127.0.0.1:${(echo2.address() as AddressInfo).port}`, { perMessageDeflate: false });
  await new Promise((r) => webDirectWs.once('open', r));
  await sleep(200);
  for (let n = 1; n <= LATENCY_FRAMES; n++) {
    sentAt.set(`wu${n}`, performance.now());
    web.send(webAudio(n));
    sentAt.set(`wd${n}`, performance.now());
    webModel.send(delta(n, WEB_FRAME));
    sentAt.set(`wx${n}`, performance.now());
    webDirectWs.send(webAudio(n));
    await sleep(n % 2 ? 1 : 2);
  }
  await sleep(300);
  web.close();
  webDirectWs.close();
  echo2.close();

  // ---- CPU per call-second: CALLS calls streaming in real time both ways, ambient sound off then on ----
  const quiet = await cpuLoad(runtime.url, model, 'load');
  const withAmbient = await cpuLoad(runtime.url, model, 'amb');
  const webLoad = await cpuLoad(runtime.url, model, 'webload', true);
  const { cpuMsPerCallSecond, callsPerVcpu, wallSec, cpuSec, callSeconds, relayed, expected } = quiet;
  await runtime.close();
  await model.close();
  const frames = ambientFrameCost();

  const added = (xs: number[], base = direct) => `${Math.max(0, median(xs) - median(base)).toFixed(2)} ms / ${Math.max(0, pct(xs, 99) - pct(base, 99)).toFixed(2)} ms`;
  const f = (n: number) => `${n.toFixed(2)} ms`;
  return [
    '## (voice) The voice runtime: relay latency and CPU per call',
    '',
    `\`bench/voice.ts\`, in one process: the runtime's session (voice/session.ts, transport, playout marks) between a stand-in Twilio media stream and a stand-in Realtime model, on loopback WebSockets. Audio passes through as the base64 each side sends (no decoding, no transcoding), so a frame costs one JSON parse and one send per hop. ${LATENCY_FRAMES} stamped 20 ms frames each way for latency; the direct hop (one socket between the stand-ins, no runtime) is measured interleaved, and "added" is the runtime's path minus it (p50 / p99).`,
    '',
    '| direction | p50 | p99 | added p50 / p99 (goal p99 ≤ 2 ms) |',
    '|---|---|---|---|',
    `| caller → model (media → input_audio_buffer.append) | ${f(median(up))} | ${f(pct(up, 99))} | ${added(up)} |`,
    `| model → caller (output_audio.delta → media + mark) | ${f(median(down))} | ${f(pct(down, 99))} | ${added(down)} |`,
    `| direct hop (baseline) | ${f(median(direct))} | ${f(pct(direct, 99))} | |`,
    '',
    `CPU: ${CALLS} calls streaming both ways in real time for ${wallSec.toFixed(1)} s (${relayed} of ${expected} frames relayed): ${cpuSec.toFixed(2)} s of CPU for ${callSeconds.toFixed(0)} call-seconds = **${cpuMsPerCallSecond.toFixed(2)} ms of CPU per call-second**, so one vCPU carries about **${callsPerVcpu} concurrent calls** (goal ≥ 100). The CPU counted is the whole process, stand-ins included (each frame is also serialized by one stand-in and parsed by the other), so the relay alone costs less: the figure is a lower bound on calls per vCPU. Not counted: TLS (the load balancer or CloudFront terminates it), the model's own latency.`,
    '',
    '### Web calls (a browser on `/web`, PCM16 24 kHz)',
    '',
    `The same measures for a browser speaking the web-call protocol (voice/browser-transport.ts): 20 ms frames of PCM16 at 24 kHz (960 bytes, six times μ-law's), relayed untouched to a model session in \`audio/pcm\`; the transport's playback clock (a timer per chunk) stands in for the carrier's mark echoes. The direct hop carries the same message over one socket.`,
    '',
    '| direction | p50 | p99 | added p50 / p99 (goal p99 ≤ 2 ms) |',
    '|---|---|---|---|',
    `| browser → model (audio → input_audio_buffer.append) | ${f(median(webUp))} | ${f(pct(webUp, 99))} | ${added(webUp, webDirect)} |`,
    `| model → browser (output_audio.delta → audio) | ${f(median(webDown))} | ${f(pct(webDown, 99))} | ${added(webDown, webDirect)} |`,
    `| direct hop (baseline) | ${f(median(webDirect))} | ${f(pct(webDirect, 99))} | |`,
    '',
    `CPU: ${CALLS} web calls streaming both ways in real time for ${webLoad.wallSec.toFixed(1)} s (${webLoad.relayed} of ${webLoad.expected} frames relayed): **${webLoad.cpuMsPerCallSecond.toFixed(2)} ms of CPU per call-second**, about **${webLoad.callsPerVcpu} concurrent web calls** per vCPU (the whole process again, stand-ins included).`,
    '',
    `Phone calls with ambient sound on (the agents' \`ambient_sound\` \`office\` at 0.5), the same load: **${withAmbient.cpuMsPerCallSecond.toFixed(2)} ms of CPU per call-second**, about **${withAmbient.callsPerVcpu} concurrent calls** per vCPU${withAmbient.mixed ? '' : ' — but the session sent the agent audio unmixed (the carrier heard no bed): the mixer is not wired into voice/session.ts, so this run measured nothing more than the first'}.`,
    '',
    `Ambient sound per frame (voice/ambient.ts, ${frames.frames.toLocaleString('en')} frames of 20 ms, 160 bytes): the bed is mixed into the μ-law by table (decode, add the bed × volume, clip, encode), with the base64 decoded and encoded again, where without it the payload passes through untouched.`,
    '',
    '| per frame | µs | vs relaying it without ambient |',
    '|---|---|---|',
    `| agent frame relayed as today (parse the delta, write the carrier's message) | ${frames.passUs.toFixed(2)} | 1.00x |`,
    `| agent frame relayed with the bed mixed in | ${frames.mixUs.toFixed(2)} | ${(frames.mixUs / frames.passUs).toFixed(2)}x (+${(frames.mixUs - frames.passUs).toFixed(2)} µs) |`,
    `| bed frame while the agent is silent (made and written) | ${frames.bedUs.toFixed(2)} | ${(frames.bedUs / frames.passUs).toFixed(2)}x |`,
    '',
    `A call carries 50 frames a second to the caller, agent audio or bed, so ambient sound costs about **${((50 * Math.max(frames.mixUs - frames.passUs, frames.bedUs)) / 1000).toFixed(3)} ms of CPU per call-second** more (the dearer of the two kinds of frame, 50 a second), against ${cpuMsPerCallSecond.toFixed(2)} ms for the whole relay above. The beds are made once per process (\`preloadAmbientBeds()\`: ${frames.preloadMs.toFixed(0)} ms here for the four).`,
    '',
  ].join('\n');
}

if (require.main === module) {
  void voiceBenchmark().then((s) => {
    console.log(s);
    process.exit(0);
  });
}
