import WebSocket from 'ws';
import { MAX_MODEL_MESSAGE_BYTES } from './config';
import type { AudioFormat } from './media-transport';
import type { RealtimeTool } from './tools-bridge';

/**
 * One session on an OpenAI Realtime-compatible WebSocket API: connect, configure, send client
 * events, receive server events under their current (GA) names. Servers still speaking the beta
 * protocol send `response.audio.delta`, `response.audio_transcript.done`, … : those are renamed
 * here, so the session only knows one vocabulary.
 */
export type ServerEvent = { type: string; [key: string]: any };

const BETA_NAMES: Record<string, string> = {
  'response.audio.delta': 'response.output_audio.delta',
  'response.audio.done': 'response.output_audio.done',
  'response.audio_transcript.delta': 'response.output_audio_transcript.delta',
  'response.audio_transcript.done': 'response.output_audio_transcript.done',
  'response.text.delta': 'response.output_text.delta',
  'response.text.done': 'response.output_text.done',
  'conversation.item.created': 'conversation.item.added',
};

/** A server event under its GA name. */
export function normalizeEvent(event: ServerEvent): ServerEvent {
  const renamed = BETA_NAMES[event.type];
  return renamed ? { ...event, type: renamed } : event;
}

export interface SessionConfig {
  instructions: string;
  voice?: string;
  temperature?: number;
  tools: RealtimeTool[];
  transcriptionModel: string;
  /** Server voice-activity detection (off while leaving a voicemail: a beep must not interrupt). */
  vad: boolean;
  /** The line's audio, in and out (default `mulaw`, the carrier's); a browser may choose `pcm16`. */
  audioFormat?: AudioFormat;
}

/** The Realtime API's name for each format: GA `audio.*.format`, and the beta `*_audio_format`. */
const GA_FORMAT: Record<AudioFormat, Record<string, unknown>> = { mulaw: { type: 'audio/pcmu' }, pcm16: { type: 'audio/pcm', rate: 24000 } };
const BETA_FORMAT: Record<AudioFormat, string> = { mulaw: 'g711_ulaw', pcm16: 'pcm16' };

/**
 * The `session.update` for the protocol: the line's format in and out (μ-law 8 kHz `audio/pcmu`,
 * beta `g711_ulaw`, for the carrier; PCM16 24 kHz `audio/pcm`, beta `pcm16`, for a browser that
 * chose it), so the line's audio passes through untouched; server VAD that answers and interrupts by
 * itself; transcription of the caller. The GA session has no `temperature` (the beta one does,
 * within 0.6–1.2), so it is sent to beta servers only.
 */
export function sessionUpdate(protocol: 'ga' | 'beta', c: SessionConfig): Record<string, unknown> {
  const vad = c.vad ? { type: 'server_vad', create_response: true, interrupt_response: true } : null;
  if (protocol === 'beta') {
    return {
      type: 'session.update',
      session: {
        modalities: ['audio', 'text'],
        instructions: c.instructions,
        ...(c.voice ? { voice: c.voice } : {}),
        input_audio_format: BETA_FORMAT[c.audioFormat ?? 'mulaw'],
        output_audio_format: BETA_FORMAT[c.audioFormat ?? 'mulaw'],
        input_audio_transcription: { model: c.transcriptionModel },
        turn_detection: vad,
        tools: c.tools,
        tool_choice: 'auto',
        ...(c.temperature !== undefined ? { temperature: Math.min(1.2, Math.max(0.6, c.temperature)) } : {}),
      },
    };
  }
  return {
    type: 'session.update',
    session: {
      type: 'realtime',
      output_modalities: ['audio'],
      instructions: c.instructions,
      audio: {
        input: { format: GA_FORMAT[c.audioFormat ?? 'mulaw'], turn_detection: vad, transcription: { model: c.transcriptionModel } },
        output: { format: GA_FORMAT[c.audioFormat ?? 'mulaw'], ...(c.voice ? { voice: c.voice } : {}) },
      },
      tools: c.tools,
      tool_choice: 'auto',
    },
  };
}

/**
 * The `session.update` of a hand-off: only what the agent handed to changes (its instructions and
 * tools; its voice only when given, i.e. while the session holds no assistant audio, the one time
 * the Realtime API lets the voice change; the beta session's temperature). Fields left out keep
 * their values, so the line's formats, VAD and transcription stay as they are.
 */
export function agentUpdate(protocol: 'ga' | 'beta', c: Pick<SessionConfig, 'instructions' | 'tools' | 'voice' | 'temperature'>): Record<string, unknown> {
  if (protocol === 'beta') {
    return {
      type: 'session.update',
      session: {
        instructions: c.instructions,
        tools: c.tools,
        tool_choice: 'auto',
        ...(c.voice ? { voice: c.voice } : {}),
        ...(c.temperature !== undefined ? { temperature: Math.min(1.2, Math.max(0.6, c.temperature)) } : {}),
      },
    };
  }
  return {
    type: 'session.update',
    session: { type: 'realtime', instructions: c.instructions, tools: c.tools, tool_choice: 'auto', ...(c.voice ? { audio: { output: { voice: c.voice } } } : {}) },
  };
}

export interface RealtimeConnectOptions {
  baseUrl: string;
  apiKey?: string;
  model: string;
  protocol: 'ga' | 'beta';
  timeoutMs: number;
}

export class RealtimeClient {
  private ws: WebSocket | undefined;
  private closedByUs = false;
  onEvent: (event: ServerEvent) => void = () => {};
  /** The socket closed or failed without us closing it. */
  onFailure: (reason: string) => void = () => {};

  /** Opens the socket; rejects when it cannot within the timeout. */
  connect(o: RealtimeConnectOptions): Promise<void> {
    const url = new URL(o.baseUrl);
    url.searchParams.set('model', o.model);
    const headers: Record<string, string> = {};
    if (o.apiKey) headers.authorization = `Bearer ${o.apiKey}`;
    if (o.protocol === 'beta') headers['openai-beta'] = 'realtime=v1';
    const ws = new WebSocket(url, { headers, maxPayload: MAX_MODEL_MESSAGE_BYTES, handshakeTimeout: o.timeoutMs, perMessageDeflate: false });
    this.ws = ws;
    return new Promise((resolve, reject) => {
      let opened = false;
      ws.once('open', () => {
        opened = true;
        resolve();
      });
      ws.on('message', (data, isBinary) => {
        if (isBinary) return;
        let event: ServerEvent;
        try {
          event = JSON.parse(data.toString());
        } catch {
          return; // not an event: nothing to act on
        }
        if (event && typeof event.type === 'string') this.onEvent(normalizeEvent(event));
      });
      ws.on('error', (err) => {
        if (!opened) reject(err);
      });
      ws.on('close', (code, reason) => {
        if (!opened) return reject(new Error(`The model's socket closed before opening (${code})`));
        if (!this.closedByUs) this.onFailure(`the model's connection closed (${code}${reason.length ? ` ${reason.toString()}` : ''})`);
      });
    });
  }

  send(event: Record<string, unknown>): void {
    if (this.ws?.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(event));
  }

  /** The caller's audio, base64 μ-law as the carrier sent it. */
  appendAudio(payload: string): void {
    if (this.ws?.readyState === WebSocket.OPEN) this.ws.send(`{"type":"input_audio_buffer.append","audio":${JSON.stringify(payload)}}`);
  }

  close(): void {
    this.closedByUs = true;
    if (this.ws && this.ws.readyState !== WebSocket.CLOSED) this.ws.close(1000);
  }
}
