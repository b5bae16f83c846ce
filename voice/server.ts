import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import { verifyToken } from '../shared/adapters/signed-token';
import { STREAM_PARAMETERS } from '../shared/domain/calls/voice-stream';
import { openVoiceSession } from '../shared/domain/calls/voice-session';
import { logger } from '../shared/logger';
import { loadCallContext } from './call-context';
import { MAX_CARRIER_MESSAGE_BYTES, voiceSettings } from './config';
import { CallSession } from './session';
import { parseTwilioFrame, TwilioTransport, type TwilioFrame } from './twilio-transport';
import { acceptBrowserCall } from './web-call';

/**
 * The voice runtime's server: `GET /health`, and WebSocket upgrades on `/stream` for Twilio Media
 * Streams. A stream is admitted only by its `start` message: a valid `voice-stream` token
 * (signed-token.ts) whose call matches the stream's parameters and the carrier's call, for a call
 * that exists and has not ended, with no other stream open for it. Anything else (no token, a
 * forged or expired one, an unknown call, a frame that is not a Media Streams message, a message
 * over MAX_CARRIER_MESSAGE_BYTES, no `start` in time) closes that socket at once (1008 policy
 * violation, 1009 too big); other calls never notice.
 */
export const STREAM_PATH = '/stream';
/** Browsers' web calls (web-call.ts; docs/api.md, "Web calls"). */
export const WEB_PATH = '/web';

/** Policy violation: refused. */
const REFUSED = 1008;

export interface VoiceServer {
  port: number;
  /** ws://127.0.0.1:<port>/stream */
  url: string;
  /** Open sessions by call id. */
  sessions: Map<string, CallSession>;
  /** Stops taking new streams and waits (at most `timeoutMs`) for the calls in progress to end, then closes. */
  drain(timeoutMs: number): Promise<void>;
  close(): Promise<void>;
}

export interface VoiceServerOptions {
  port?: number;
  host?: string;
}

export async function startVoiceServer(options: VoiceServerOptions = {}): Promise<VoiceServer> {
  const sessions = new Map<string, CallSession>();
  const wss = new WebSocketServer({ noServer: true, maxPayload: MAX_CARRIER_MESSAGE_BYTES, perMessageDeflate: false });
  const http: Server = createServer((req, res) => {
    if (req.method === 'GET' && (req.url === '/health' || req.url?.startsWith('/health?'))) {
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ status: 'ok', calls: sessions.size }));
    }
    res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'not found' }));
  });
  http.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const path = (req.url ?? '').split('?')[0];
    if (path === WEB_PATH) {
      wss.handleUpgrade(req, socket, head, (ws) => acceptBrowserCall(ws, sessions));
      return;
    }
    if (path !== STREAM_PATH) {
      socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\n\r\n');
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => accept(ws));
  });

  function accept(ws: WebSocket): void {
    const carrier = new TwilioTransport(ws);
    const settings = voiceSettings();
    let session: CallSession | undefined;
    let admitting = false;
    const early: TwilioFrame[] = [];
    const refuse = (why: string, code = REFUSED) => {
      logger.warn('A media stream was refused', { reason: why });
      carrier.close(code, why.slice(0, 120));
    };
    const startTimer = setTimeout(() => !session && refuse('no start message in time'), settings.startTimeoutMs);

    ws.on('message', (data, isBinary) => {
      const frame = parseTwilioFrame(data, isBinary);
      if (!frame) return refuse(session ? 'malformed frame' : 'malformed frame before admission');
      if (session) return session.onCarrierFrame(frame);
      if (frame.event === 'connected') return;
      if (frame.event === 'start' && !admitting) {
        admitting = true;
        void admit(frame).catch((err) => {
          logger.error('A media stream could not be admitted', { error: err as Error });
          refuse('admission failed', 1011);
        });
        return;
      }
      // Twilio sends media right after start: keep it until the stream is admitted.
      if (admitting && frame.event !== 'start' && early.length < 1000) return void early.push(frame);
      refuse(`${frame.event} before start`);
    });
    ws.on('close', () => {
      clearTimeout(startTimer);
      session?.onCarrierClosed();
    });
    ws.on('error', (err) => {
      // ws closes the socket itself (1009 for an oversized message); the close handler ends the session.
      logger.warn('A media stream failed', { error: err });
    });

    async function admit(frame: Extract<TwilioFrame, { event: 'start' }>): Promise<void> {
      const startMs = Date.now();
      const params = frame.start.customParameters;
      const claims = await verifyToken('voice-stream', params[STREAM_PARAMETERS.token]);
      if (!claims?.organization_id || !claims.call_id) return refuse('invalid or expired stream token');
      // The token names the call; plain parameters that disagree mean a token taken from another call.
      for (const name of [STREAM_PARAMETERS.organizationId, STREAM_PARAMETERS.callId] as const) {
        const claim = name === STREAM_PARAMETERS.callId ? claims.call_id : claims.organization_id;
        if (params[name] !== undefined && params[name] !== claim) return refuse('stream parameters do not match the token');
      }
      // A stream handed over to a warm transfer may not have seen its stop yet when the caller comes back on a new one.
      // Likewise one whose stream stopped (the platform moved the caller) and is still writing its record.
      const existing = sessions.get(claims.call_id);
      if (existing && !existing.handedOver && !existing.streamOver) return refuse('the call already has a stream');
      const context = await loadCallContext(claims.organization_id, claims.call_id);
      if (!context) return refuse('unknown call');
      if (context.call.status === 'ended') return refuse('the call has ended');
      const sid = context.call.provider_call_id;
      if (sid && frame.start.callSid && sid !== frame.start.callSid) return refuse('the stream belongs to another carrier call');
      if (ws.readyState !== ws.OPEN) return;
      // One stream per token, ever, whichever runtime task it reaches (a conditional write, not this process's memory).
      const admission = await openVoiceSession(claims.organization_id, claims.call_id, params[STREAM_PARAMETERS.token]!);
      if (admission !== 'admitted') return refuse(admission === 'token_used' ? 'the stream token was already used' : 'the call has ended');
      if (ws.readyState !== ws.OPEN) return;
      carrier.streamSid = frame.streamSid;
      const s = new CallSession({
        carrier,
        context,
        settings,
        answeredBy: params[STREAM_PARAMETERS.answeredBy] ?? params.AnsweredBy,
        providerCallId: frame.start.callSid,
        startMs,
        ...(params[STREAM_PARAMETERS.resume] !== undefined ? { resume: params[STREAM_PARAMETERS.resume] } : {}),
        ...(claims.traceparent ? { traceparent: claims.traceparent } : {}),
      });
      // From here frames go to the session; the ones that came while admitting go first, in order.
      session = s;
      for (const f of early.splice(0)) s.onCarrierFrame(f);
      clearTimeout(startTimer);
      sessions.set(s.callId, s);
      void s.done.then(() => sessions.get(s.callId) === s && sessions.delete(s.callId));
      await s.start();
      logger.info('A call is live on the voice runtime', { call_id: s.callId, stream_sid: frame.streamSid });
    }
  }

  await new Promise<void>((resolve) => http.listen(options.port ?? 0, options.host ?? '0.0.0.0', resolve));
  const port = (http.address() as AddressInfo).port;
  const server: VoiceServer = {
    port,
    url: `ws://127.0.0.1:${port}${STREAM_PATH}`,
    sessions,
    async drain(timeoutMs) {
      http.close();
      const deadline = Date.now() + timeoutMs;
      while (sessions.size && Date.now() < deadline) await new Promise((r) => setTimeout(r, 250));
      // Calls still open: each is ended with its reason recorded and an apology from the carrier.
      await Promise.allSettled([...sessions.values()].map((s) => s.shutdown()));
      await server.close();
    },
    async close() {
      for (const client of wss.clients) client.terminate();
      await Promise.allSettled([...sessions.values()].map((s) => s.done));
      wss.close();
      await new Promise<void>((resolve) => (http.listening ? http.close(() => resolve()) : resolve()));
    },
  };
  return server;
}
