import type { Operation } from '../../shared/http/operation';
import { operations, websocketRoutes } from '../../shared/http/registry';
import type { JobDefinition } from '../../shared/jobs/definition';
import { jobs } from '../../shared/jobs/registry';
import type { VoiceAgentPlatformStackProps } from '../../lib/stack';
import { byDescription, nagErrors, readsSecrets, synth, variables, type Synthesized } from './synth';

/** A job that runs the conversation model and an operation that does not, the two sides of the grant. */
const converse: JobDefinition = {
  kind: 'queue', name: 'converse', entry: 'functions/test/converse.ts', description: 'Runs conversations',
  visibilityTimeoutSeconds: 60, maxReceiveCount: 5, batchSize: 1, access: { table: 'RW', llm: true },
};
const other: Operation = {
  method: 'GET', path: '/api/v1/other', operationId: 'other', summary: 'Other', tag: 'Other', entry: 'functions/test/other.ts',
  auth: false, access: { table: 'R' },
};

const build = (llm?: VoiceAgentPlatformStackProps['llm']) => synth({ operations: [other], jobs: [converse], llm });

const llmSecrets = (s: Synthesized) => s.resources('AWS::SecretsManager::Secret').filter((r) => r.logicalId.startsWith('LlmApiKey'));

describe('the conversation model settings', () => {
  it('runs the local model by default: the setting only where declared, no key secret and no grant', () => {
    const s = build();
    expect(llmSecrets(s)).toEqual([]);
    const job = byDescription(s, 'Job converse: ');
    expect(variables(job).LLM_PROVIDER).toBe('local');
    expect(variables(job).LLM_SECRET_ARN).toBeUndefined();
    expect(readsSecrets(s, job)).toEqual([]);
    expect(variables(byDescription(s, 'GET /api/v1/other: ')).LLM_PROVIDER).toBeUndefined();
  });

  it('with openai, keeps the key in a retained secret that only the model-running function may read, with the base URL, model and timeout', () => {
    const s = build({ provider: 'openai', baseUrl: 'https://llm.example.com/v1', defaultModel: 'gpt-4.1-mini', timeoutMs: 15_000 });
    const [secret] = llmSecrets(s);
    expect(secret).toBeDefined();
    expect(secret.DeletionPolicy).toBe('Retain');
    const job = byDescription(s, 'Job converse: ');
    expect(variables(job)).toMatchObject({
      LLM_PROVIDER: 'openai', LLM_BASE_URL: 'https://llm.example.com/v1', LLM_MODEL: 'gpt-4.1-mini', LLM_TIMEOUT_MS: '15000',
      LLM_SECRET_ARN: { Ref: secret.logicalId },
    });
    const grants = readsSecrets(s, job);
    expect(grants).toHaveLength(1);
    expect(grants[0].Resource).toEqual({ Ref: secret.logicalId });
    const op = byDescription(s, 'GET /api/v1/other: ');
    expect(readsSecrets(s, op)).toEqual([]);
    expect(variables(op).LLM_SECRET_ARN).toBeUndefined();
    expect(nagErrors(s)).toEqual([]);
  });

  it('with openai and an existing secret by name, creates none and grants that one', () => {
    const s = build({ provider: 'openai', secretName: 'vap/llm' });
    expect(llmSecrets(s)).toEqual([]);
    const job = byDescription(s, 'Job converse: ');
    expect(readsSecrets(s, job)).toHaveLength(1);
    expect(JSON.stringify(variables(job).LLM_SECRET_ARN)).toContain('secret:vap/llm');
  });

  it('gives the model settings to every registry operation or job that declares them, and to no other', () => {
    const s = synth({ llm: { provider: 'openai' } });
    const declared = new Set([
      ...[...operations, ...jobs].filter((d) => d.access.llm).map((d) => ('operationId' in d ? `${d.method} ${d.path}: ` : `Job ${d.name}: `)),
      // A streaming route's second function (served by the streaming REST API) has the same needs.
      ...operations.filter((d) => d.access.llm && d.streams).map((d) => `${d.method} ${d.path} (streamed): `),
      ...websocketRoutes.filter((r) => r.access.llm).map((r) => `Relay ${r.routeKey}: `),
    ]);
    expect(declared.size).toBeGreaterThan(0);
    for (const fn of s.resources('AWS::Lambda::Function')) {
      const description = String(fn.Properties.Description);
      const declares = [...declared].some((prefix) => description.startsWith(prefix));
      expect([description, variables(fn)?.LLM_SECRET_ARN !== undefined, variables(fn)?.LLM_PROVIDER]).toEqual([description, declares, declares ? 'openai' : undefined]);
    }
  });
});
