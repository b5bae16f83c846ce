import { logger } from '../shared/logger';
import { flushTracing, startTracing } from '../shared/telemetry/tracing';
import { preloadAmbientBeds } from './ambient';
import { publishCallMetrics, publishOpenCalls } from './open-calls-metric';
import { startVoiceServer } from './server';

/**
 * The voice runtime's entry (the container's command): the media-stream server on PORT (8080),
 * with GET /health for the load balancer. On SIGTERM (a deploy or scale-in) it stops taking new
 * streams and lets the calls in progress finish for up to VOICE_DRAIN_SECONDS (default 110, inside
 * ECS's longest stop timeout of 120 s); a call cut off after that ends through the carrier, and
 * keeps why (voice-session.ts).
 */
async function main(): Promise<void> {
  // The ambient beds are made once per process: made now, the first call using one does not stall the others.
  preloadAmbientBeds();
  // Traces when the standard OTEL_* settings ask for them (docs/operations.md, "Traces"): each call's responses and tool calls join the call's trace.
  await startTracing();
  const server = await startVoiceServer({ port: Number(process.env.PORT) || 8080 });
  logger.info('Voice runtime listening', { port: server.port, path: '/stream' });
  // The service scales on this (lib/voice.ts): every minute, this task's open calls as an EMF line.
  publishOpenCalls(() => server.sessions.size);
  // The platform metrics (docs/operations.md, "Metrics"): calls in progress, the calls' replies and errors, every minute.
  publishCallMetrics(() => server.sessions.values());
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info('Voice runtime draining', { signal, calls: server.sessions.size });
    void server
      .drain((Number(process.env.VOICE_DRAIN_SECONDS) || 110) * 1000)
      .then(() => flushTracing())
      .then(() => process.exit(0));
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

void main().catch((err) => {
  logger.error('The voice runtime could not start', { error: err as Error });
  process.exit(1);
});
