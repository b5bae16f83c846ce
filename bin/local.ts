/**
 * `npm start`: the whole platform on this machine, no AWS account (see DESIGN.md, "The local
 * runtime"). Settings, each with a default that works:
 *   PORT (3000) · DATA_DIR (.data) · LOCAL_API_KEYS (comma-separated; none: one is generated
 *   and kept in DATA_DIR) · ALLOW_LOOPBACK_FETCH (false) · TICK_SECONDS (5) · LOG_LEVEL ·
 *   VOICE_PORT (any free port) · DYNAMODB_START_TIMEOUT_SECONDS (120); README, "Configuration", has them all.
 */
import type { Platform } from '../shared/local/platform';

function setting(name: string, fallback: string): string {
  const value = process.env[name];
  return value === undefined || value.trim() === '' ? fallback : value.trim();
}

function positiveNumber(name: string, fallback: number, integer: boolean): number {
  const raw = setting(name, String(fallback));
  const n = Number(raw);
  if (!Number.isFinite(n) || n < 0 || (integer && !Number.isInteger(n))) {
    throw new Error(`${name} must be a ${integer ? 'non-negative integer' : 'positive number'}, got "${raw}".`);
  }
  return n;
}

async function main(): Promise<Platform> {
  const startedAt = Date.now();
  const port = positiveNumber('PORT', 3000, true);
  if (port > 65535) throw new Error(`PORT must be a port number (0 to 65535), got "${port}".`);
  const tickSeconds = positiveNumber('TICK_SECONDS', 5, false);
  const dataDir = setting('DATA_DIR', '.data');
  const apiKeys = setting('LOCAL_API_KEYS', '').split(',').map((k) => k.trim()).filter(Boolean);
  const allowLoopbackFetch = setting('ALLOW_LOOPBACK_FETCH', 'false') === 'true';
  // Set before any module that builds the logger is loaded.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  if (!process.env.LOG_LEVEL) process.env.POWERTOOLS_LOG_LEVEL ??= 'WARN';

  const { startPlatform } = await import('../shared/local/platform');
  const platform = await startPlatform({ port, dataDir, apiKeys, allowLoopbackFetch, tickSeconds, demo: true });
  const key = platform.apiKeys[0]!;
  // After the platform set its environment: the same settings the adapters read.
  const { modelsInUse } = await import('../shared/config');
  const models = modelsInUse();
  const keyLines = platform.keys.map((k) => `  ${k.key}${k.generated ? `   (generated, kept in ${dataDir}/local-api-key)` : ''}`);
  console.log(
    [
      '',
      `Voice AI Agent Platform API, local runtime (ready in ${((Date.now() - startedAt) / 1000).toFixed(1)} s)`,
      '',
      `  API:      ${platform.url}/api/v1`,
      `  Health:   ${platform.url}/api/v1/health`,
      `  OpenAPI:  ${platform.url}/api/v1/openapi.json`,
      `  Docs:     ${platform.url}/api/v1/docs   (the API reference, rendered from the OpenAPI document)`,
      ...(platform.demo ? [`  Demo:     ${platform.demo.url}   (the web widget; its agent ${platform.demo.created ? 'was just created' : 'as you left it'})`] : []),
      ...(platform.voice ? [`  Voice:    ${platform.voice.url}   (Twilio media streams; VOICE_RUNTIME_URL is ${process.env.VOICE_RUNTIME_URL})`] : []),
      `  Relay:    ${platform.relay.url}   (Twilio ConversationRelay for agents with voice_pipeline "relay"; talk to one: npm run relay -- <agent_id>)`,
      `  Data:     ${platform.dataDir}`,
      ...(platform.faults ? [`  Faults:   ${platform.faults.describe()}   (LOCAL_FAULTS, docs/operations.md "Faults on demand")`] : []),
      '',
      'Models:',
      `  Conversation: ${models.conversation}`,
      `  Speech:       ${models.speech}`,
      `  Analyzer:     ${models.analyzer}`,
      ...(models.localRules
        ? ['  Chats, the widget and simulated calls are answered by the local rules: they quote the knowledge base and', '  call the tools you name, and are not a language model (README, "Talk to your agent").']
        : []),
      '',
      `API key${platform.keys.length > 1 ? 's' : ''} (header X-Api-Key):`,
      ...keyLines,
      '',
      'Try (the README\'s examples take the address from BASE_URL):',
      `  export BASE_URL=${platform.url}`,
      `  curl -s -H "X-Api-Key: ${key}" $BASE_URL/api/v1/agents`,
      '',
      'Ctrl-C stops everything.',
      '',
    ].join('\n'),
  );
  return platform;
}

main().then(
  (platform) => {
    let stopping = false;
    const shutdown = (signal: NodeJS.Signals) => {
      if (stopping) process.exit(1);
      stopping = true;
      console.log(`\n${signal}: stopping…`);
      // A second Ctrl-C while stopping, or a stop that hangs, still ends the process.
      const force = setTimeout(() => process.exit(1), 10_000);
      force.unref();
      platform.stop().then(
        () => process.exit(0),
        (err: Error) => {
          console.error(`Error while stopping: ${err.message}`);
          process.exit(1);
        },
      );
    };
    process.on('SIGINT', shutdown);
    process.on('SIGTERM', shutdown);
    // `npm start` runs this under `sh -c`; npm forwards its SIGTERM to that shell, and dash (the
    // usual /bin/sh) dies of it without passing it on. Losing our parent is therefore a stop
    // signal too, so `kill <npm pid>` never leaves the runtime and its DynamoDB Local behind.
    const parent = process.ppid;
    const orphaned = setInterval(() => {
      if (process.ppid === parent) return;
      clearInterval(orphaned);
      shutdown('SIGTERM');
    }, 250);
    orphaned.unref();
  },
  (err: unknown) => {
    console.error(`\nThe local runtime could not start:\n${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
