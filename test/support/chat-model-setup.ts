import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startOpenAiStandIn, type OpenAiStandIn } from './openai-stand-in';
import type { PlatformOptions } from '../../shared/local/platform';
import { expectNoUnexpected5xx, startTestPlatform, type TestPlatform } from './platform';
import { readBody } from './stand-in';

/**
 * The local platform whose model is the OpenAI stand-in (LLM_PROVIDER=openai, a 4 s model timeout),
 * and a webhook-tool receiver that records each JSON body and answers `{ temperature_c: 21 }`: what
 * the suites that chat with a scripted OpenAI-compatible model over HTTP share.
 *
 *   beforeAll(async () => ({ model, local, toolUrl, toolBodies } = setup = await startChatModelSetup()), 60_000);
 *   afterAll(() => setup?.stop());
 */
export interface ChatModelSetup {
  model: OpenAiStandIn;
  local: TestPlatform;
  /** The receiver's `…/weather` URL, for a webhook tool. */
  toolUrl: string;
  /** The JSON bodies the receiver got, in order. */
  toolBodies: any[];
  /** Stops the platform, the model and the receiver, then asserts the platform answered no unexpected 5xx. */
  stop(): Promise<void>;
}

/** Starts the stand-in model, the tool receiver and the platform pointed at the model (with `platform`'s options too); on a failure, stops what started. */
export async function startChatModelSetup(platform: Pick<PlatformOptions, 'metrics'> = {}): Promise<ChatModelSetup> {
  const toolBodies: any[] = [];
  let model: OpenAiStandIn | undefined;
  let tool: Server | undefined;
  let local: TestPlatform | undefined;
  const stop = async () => {
    await local?.stop();
    await model?.close();
    if (tool?.listening) await new Promise<void>((r) => tool!.close(() => r()));
    // After stopping, so a failure logged while the last requests settle is seen too.
    if (local) expectNoUnexpected5xx(local);
  };
  try {
    model = await startOpenAiStandIn();
    tool = createServer(async (req, res) => {
      toolBodies.push(JSON.parse(await readBody(req)));
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ temperature_c: 21 }));
    });
    await new Promise<void>((r) => tool!.listen(0, '127.0.0.1', r));
    local = await startTestPlatform({ ...platform, env: { LLM_PROVIDER: 'openai', LLM_BASE_URL: model.url, LLM_API_KEY: 'sk-test-standin', LLM_TIMEOUT_MS: '4000' } });
  } catch (err) {
    await stop().catch(() => undefined);
    throw err;
  }
  return { model, local, toolUrl: `http://127.0.0.1:${(tool.address() as AddressInfo).port}/weather`, toolBodies, stop };
}

/** Creates the `get_weather` webhook tool (a city in, the weather out) calling `url`; its id. */
export async function createWeatherTool(local: TestPlatform, url: string): Promise<string> {
  const created = await local.api('POST', '/api/v1/tools', {
    body: { name: 'Weather', type: 'webhook', url, definition: { name: 'get_weather', description: 'Weather in a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } },
  });
  return created.body.data.id as string;
}
