import { installTimeSource } from '../../shared/clock';
import { usePlatform, type TestPlatform } from './platform';
import { startRealtimeStandIn, type ModelConnection, type RealtimeStandIn } from './realtime-stand-in';

/** What a voice-call suite drives: the platform, its scripted speech model and its clock. */
export interface VoiceCallWiring {
  local: () => TestPlatform;
  api: TestPlatform['api'];
  /** The Realtime stand-in (started before the platform). */
  model: () => RealtimeStandIn;
  /** The model's script for each connection, by the agent's `s2s_model`. */
  scripts: Map<string, (m: ModelConnection) => Promise<void>>;
  /** Moves the platform's clock forward, as a live call's time passing. */
  advanceClock(ms: number): void;
  callOf(id: string): Promise<any>;
  /** The billing charges for a resource (a call). */
  chargesOf(id: string): Promise<any[]>;
  /** The events of `type` about resource `id`. */
  eventsOf(type: string, id: string): Promise<any[]>;
}

/**
 * The local runtime with its voice runtime, speaking to a scripted Realtime stand-in: each model
 * connection runs the script registered under its `model` (an unknown one fails the connection),
 * the platform's clock is shifted by hand (`advanceClock`), and after each test the stand-in must
 * have seen no protocol errors. `env` adds to the platform's environment (read when it starts,
 * after every earlier `beforeAll`, so a stand-in started before may give its URL). Registers its
 * hooks: call it at the top of a test file.
 */
export function useVoiceCallWiring(env: () => Record<string, string> = () => ({})): VoiceCallWiring {
  let offsetMs = 0;
  let model: RealtimeStandIn | undefined;
  const scripts = new Map<string, (m: ModelConnection) => Promise<void>>();
  // Started with the file, before the platform, which reads its URL from its environment.
  const ready = (async () => {
    model = await startRealtimeStandIn(async (m) => {
      const script = scripts.get(m.model ?? '');
      if (!script) throw new Error(`no script for model ${m.model}`);
      await script(m);
    });
  })();
  beforeAll(() => ready);

  const local = usePlatform({
    get env() {
      return { ...env(), REALTIME_BASE_URL: model!.url, REALTIME_API_KEY: 'sk-stand-in' };
    },
  } as never);
  const api: TestPlatform['api'] = (...args) => local().api(...args);

  beforeAll(() => installTimeSource({ now: () => Date.now() + offsetMs }));
  afterAll(async () => {
    installTimeSource(undefined);
    await model?.close();
  });
  afterEach(() => expect(model!.errors).toEqual([]));

  return {
    local,
    api,
    model: () => model!,
    scripts,
    advanceClock: (ms) => void (offsetMs += ms),
    callOf: async (id) => (await api('GET', `/api/v1/calls/${id}`)).body.data,
    chargesOf: async (id) => (await api('GET', '/api/v1/billing/charges?limit=100')).body.data.filter((c: any) => c.resource_id === id),
    eventsOf: async (type, id) => (await api('GET', `/api/v1/events?type=${type}&limit=100`)).body.data.filter((e: any) => e.data?.id === id),
  };
}
