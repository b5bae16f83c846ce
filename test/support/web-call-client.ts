import WebSocket from 'ws';

/**
 * A browser's side of a web call, as docs/api.md ("Web calls") describes it: connect to the `url`
 * POST /web-calls answered, send `start` with the token and a format, then `audio` (base64) and
 * `hangup`; keep what the runtime sends (`started`, `audio`, `clear`, `speaking`, `transcript`,
 * `error`, `ended`) and the close.
 */
export class WebCallClient {
  readonly messages: any[] = [];
  readonly closed: Promise<{ code: number; reason: string }>;
  private waiters: (() => void)[] = [];

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data) => {
      this.messages.push(JSON.parse(data.toString()));
      this.wake();
    });
    this.closed = new Promise((resolve) =>
      ws.on('close', (code, reason) => {
        resolve({ code, reason: reason.toString() });
        this.wake();
      }),
    );
  }

  static async connect(url: string): Promise<WebCallClient> {
    const ws = new WebSocket(url);
    const client = new WebCallClient(ws);
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    return client;
  }

  /** Connects and sends `start`. */
  static async start(url: string, token: string, format: 'pcm16' | 'mulaw'): Promise<WebCallClient> {
    const client = await WebCallClient.connect(url);
    client.send({ type: 'start', token, format });
    return client;
  }

  send(message: unknown): void {
    this.ws.send(typeof message === 'string' ? message : JSON.stringify(message));
  }

  /** Sends audio in `chunk`-byte messages. */
  sendAudio(audio: Buffer, chunk = 4800): void {
    for (let at = 0; at < audio.length; at += chunk) this.send({ type: 'audio', audio: audio.subarray(at, at + chunk).toString('base64') });
  }

  hangUp(): void {
    this.send({ type: 'hangup' });
  }

  of(type: string): any[] {
    return this.messages.filter((m) => m.type === type);
  }

  /** Every agent audio byte received, in order (a `clear` does not remove what was received). */
  audio(): Buffer {
    return Buffer.concat(this.of('audio').map((m) => Buffer.from(m.audio, 'base64')));
  }

  /** Waits (at most `ms`) until `check` holds over what was received. */
  async until(check: () => boolean, what: string, ms = 10_000): Promise<void> {
    const deadline = Date.now() + ms;
    while (!check()) {
      if (Date.now() > deadline) throw new Error(`web call client: ${what} never happened (got ${JSON.stringify(this.messages.map((m) => m.type))})`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, 100);
        this.waiters.push(() => (clearTimeout(t), resolve()));
      });
    }
  }

  close(): void {
    this.ws.close(1000);
  }

  private wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }
}

/** A PCM16 24 kHz mono tone (little-endian), deterministic: `seconds` of a sine at `hz`. */
export function pcm16Tone(seconds: number, hz = 440, amplitude = 8000): Buffer {
  const samples = Math.round(seconds * 24000);
  const out = Buffer.alloc(samples * 2);
  for (let i = 0; i < samples; i++) out.writeInt16LE(Math.round(amplitude * Math.sin((2 * Math.PI * hz * i) / 24000)), i * 2);
  return out;
}
