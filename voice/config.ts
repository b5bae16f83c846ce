/**
 * The voice runtime's settings (environment variables, each with a default that works locally).
 * Read once per session start, so a test may change them between calls.
 */
export interface VoiceSettings {
  /** The Realtime API's WebSocket endpoint (`?model=` is added). */
  realtimeBaseUrl: string;
  realtimeApiKey: string | undefined;
  /** `ga` (default: `session.type: realtime`, `audio/pcmu`) or `beta` (`OpenAI-Beta: realtime=v1`, `g711_ulaw`, `temperature`). */
  realtimeProtocol: 'ga' | 'beta';
  /** The model when the agent names none (`s2s_model` empty). */
  defaultModel: string;
  /** Transcribes the caller's speech (the transcript's `user` turns). */
  transcriptionModel: string;
  /** How long an admitted stream may wait for the model to connect. */
  connectTimeoutMs: number;
  /** How long a connection may take to send its `start` (with the token). */
  startTimeoutMs: number;
  /** The silence that hangs up an agent with `end_call_after_silence` whose reminders are off (`reminder_trigger_ms` 0). */
  silenceEndMs: number;
}

export function voiceSettings(): VoiceSettings {
  const env = process.env;
  return {
    realtimeBaseUrl: env.REALTIME_BASE_URL || 'wss://api.openai.com/v1/realtime',
    realtimeApiKey: env.REALTIME_API_KEY || undefined,
    realtimeProtocol: env.REALTIME_PROTOCOL === 'beta' ? 'beta' : 'ga',
    defaultModel: env.REALTIME_MODEL || 'gpt-realtime',
    transcriptionModel: env.REALTIME_TRANSCRIPTION_MODEL || 'gpt-4o-mini-transcribe',
    connectTimeoutMs: Number(env.REALTIME_CONNECT_TIMEOUT_MS) || 10_000,
    startTimeoutMs: Number(env.VOICE_START_TIMEOUT_MS) || 10_000,
    silenceEndMs: Number(env.VOICE_SILENCE_END_MS) || 10_000,
  };
}

/** Largest WebSocket message accepted from the carrier: a `start` with its parameters, or a media frame, is well under it. */
export const MAX_CARRIER_MESSAGE_BYTES = 64 * 1024;
/** Largest message accepted from the model (audio deltas, a session echo with a long prompt). */
export const MAX_MODEL_MESSAGE_BYTES = 16 * 1024 * 1024;
/** The caller's audio kept while the model connects (20 ms frames: 10 s). */
export const MAX_BUFFERED_FRAMES = 500;
