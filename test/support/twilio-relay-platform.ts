import { clockMs } from '../../shared/clock';
import { startOpenAiStandIn, type OpenAiStandIn } from './openai-stand-in';
import { usePlatform, type TestPlatform } from './platform';
import { startTwilioCarrier, type TwilioCarrierStandIn } from './twilio-carrier';

/**
 * One test file's local platform on Twilio's stand-in (REST, incoming calls, status callbacks; the
 * relay's ConversationRelay sessions through its client) with a stand-in Chat Completions model:
 * what relay-call suites share. Call at the top of the file.
 *
 *   const { local, twilio, model } = useTwilioRelayPlatform('AC…', 'token');
 */
export function useTwilioRelayPlatform(accountSid: string, authToken: string): { local: () => TestPlatform; twilio: () => TwilioCarrierStandIn; model: () => OpenAiStandIn } {
  let twilio: TwilioCarrierStandIn | undefined;
  let model: OpenAiStandIn | undefined;
  const ready = (async () => {
    twilio = await startTwilioCarrier({ accountSid, authToken, now: () => clockMs() });
    model = await startOpenAiStandIn();
  })();
  beforeAll(() => ready);
  afterAll(async () => {
    await twilio?.close();
    await model?.close();
  });
  const local = usePlatform({
    get env() {
      return {
        TELEPHONY_PROVIDER: 'twilio', TWILIO_API_BASE: twilio!.url, TWILIO_PRICING_BASE: twilio!.url, TWILIO_ACCOUNT_SID: accountSid, TWILIO_AUTH_TOKEN: authToken,
        LLM_PROVIDER: 'openai', LLM_BASE_URL: model!.url, LLM_API_KEY: 'sk-stand-in', LLM_MODEL: 'stand-in-model',
      };
    },
  } as never);
  return { local, twilio: () => twilio!, model: () => model! };
}
