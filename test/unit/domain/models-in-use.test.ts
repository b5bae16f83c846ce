import { modelsInUse, resetConfig } from '../../../shared/config';
import { effectiveAnalysisModel, effectiveModel, effectiveSpeechModel } from '../../../shared/domain/agents/models';
import { agentDefaults } from '../../../shared/domain/agents/schemas';

const NAMES = ['TABLE_NAME', 'BUCKET_NAME', 'LLM_PROVIDER', 'LLM_BASE_URL', 'LLM_MODEL', 'LLM_API_KEY', 'LLM_SECRET_ARN', 'ANALYSIS_PROVIDER', 'ANALYSIS_BASE_URL', 'ANALYSIS_MODEL', 'ANALYSIS_API_KEY', 'ANALYSIS_SECRET_ARN', 'ANALYSIS_SECRET_NAME', 'REALTIME_MODEL', 'REALTIME_BASE_URL', 'REALTIME_API_KEY'];
const saved = new Map(NAMES.map((n) => [n, process.env[n]]));

/** Sets exactly these settings (the others unset) and forgets the cached configuration. */
function withEnv(env: Record<string, string>) {
  for (const name of NAMES) delete process.env[name];
  Object.assign(process.env, { TABLE_NAME: 't', BUCKET_NAME: 'b', ...env });
  resetConfig();
}
afterAll(() => {
  for (const [name, value] of saved) if (value === undefined) delete process.env[name]; else process.env[name] = value;
  resetConfig();
});

describe('model defaults follow configuration', () => {
  it('creates agents with "" models, which mean the configured ones at each use', () => {
    expect([agentDefaults.model, agentDefaults.s2s_model, agentDefaults.post_call_analysis_model]).toEqual(['', '', '']);
    withEnv({ LLM_MODEL: 'llama3.2:3b', REALTIME_MODEL: 'gpt-realtime-mini', ANALYSIS_MODEL: 'qwen2.5' });
    expect(effectiveModel({ model: '' })).toBe('llama3.2:3b');
    expect(effectiveSpeechModel({ s2s_model: '' })).toBe('gpt-realtime-mini');
    expect(effectiveAnalysisModel({ post_call_analysis_model: ' ' })).toBe('qwen2.5');
    expect([effectiveModel({ model: 'gpt-test' }), effectiveSpeechModel({ s2s_model: 'gpt-realtime' }), effectiveAnalysisModel({ post_call_analysis_model: 'gpt-4o' })]).toEqual(['gpt-test', 'gpt-realtime', 'gpt-4o']);
    withEnv({});
    expect([effectiveModel({ model: '' }), effectiveSpeechModel({}), effectiveAnalysisModel({})]).toEqual(['gpt-4o-mini', 'gpt-realtime', 'gpt-4o-mini']);
  });
});

describe('modelsInUse', () => {
  it('says plainly when the local rules answer', () => {
    withEnv({});
    const used = modelsInUse();
    expect(used.localRules).toBe(true);
    expect(used.conversation).toMatch(/^local rules, not a language model/);
    expect(used.analyzer).toMatch(/^local rules, not a language model/);
    expect(used.speech).toBe('gpt-realtime at wss://api.openai.com/v1/realtime; REALTIME_API_KEY is not set (agents whose s2s_model is empty)');
  });

  it('names each configured model and where it answers, and a missing key', () => {
    withEnv({
      LLM_PROVIDER: 'openai', LLM_BASE_URL: 'http://127.0.0.1:11434/v1/', LLM_MODEL: 'llama3.2:3b',
      ANALYSIS_PROVIDER: 'openai', ANALYSIS_MODEL: 'gpt-4o', ANALYSIS_API_KEY: 'sk-secret-value',
      REALTIME_MODEL: 'gpt-realtime-mini', REALTIME_BASE_URL: 'ws://127.0.0.1:9000/v1/realtime', REALTIME_API_KEY: 'sk-rt',
    });
    const used = modelsInUse();
    expect(used).toEqual({
      conversation: 'llama3.2:3b at http://127.0.0.1:11434/v1; LLM_API_KEY is not set (agents whose model is empty)',
      analyzer: 'gpt-4o at https://api.openai.com/v1 (agents whose post_call_analysis_model is empty)',
      speech: 'gpt-realtime-mini at ws://127.0.0.1:9000/v1/realtime (agents whose s2s_model is empty)',
      localRules: false,
    });
    expect(JSON.stringify(used)).not.toContain('sk-');
  });
});
