import type { Operation } from '../../shared/http/operation';
import { operations } from '../../shared/http/registry';
import type { JobDefinition } from '../../shared/jobs/definition';
import { jobs } from '../../shared/jobs/registry';
import type { VoiceAgentPlatformStackProps } from '../../lib/stack';
import { byDescription, nagErrors, readsSecrets, synth, variables, type Synthesized } from './synth';

/** A job that analyses calls and an operation that does not, the two sides of the grant. */
const analyse: JobDefinition = {
  kind: 'queue', name: 'analyse', entry: 'functions/test/analyse.ts', description: 'Analyses calls',
  visibilityTimeoutSeconds: 60, maxReceiveCount: 5, batchSize: 1, access: { table: 'RW', analysis: true },
};
const other: Operation = {
  method: 'GET', path: '/api/v1/other', operationId: 'other', summary: 'Other', tag: 'Other', entry: 'functions/test/other.ts',
  auth: false, access: { table: 'R' },
};

const build = (analysis?: VoiceAgentPlatformStackProps['analysis']) => synth({ operations: [other], jobs: [analyse], analysis });

const analysisSecrets = (s: Synthesized) => s.resources('AWS::SecretsManager::Secret').filter((r) => r.logicalId.startsWith('AnalysisApiKey'));

describe('the post-call analysis settings', () => {
  it('runs the local analyzer by default: the setting only where declared, no key secret and no grant', () => {
    const s = build();
    expect(analysisSecrets(s)).toEqual([]);
    const job = byDescription(s, 'Job analyse: ');
    expect(variables(job).ANALYSIS_PROVIDER).toBe('local');
    expect(variables(job).ANALYSIS_SECRET_ARN).toBeUndefined();
    expect(readsSecrets(s, job)).toEqual([]);
    expect(variables(byDescription(s, 'GET /api/v1/other: ')).ANALYSIS_PROVIDER).toBeUndefined();
  });

  it('with openai, keeps the key in a retained secret that only the analysing function may read, with the base URL and model', () => {
    const s = build({ provider: 'openai', baseUrl: 'https://llm.example.com/v1', defaultModel: 'gpt-4.1-mini' });
    const [secret] = analysisSecrets(s);
    expect(secret).toBeDefined();
    expect(secret.DeletionPolicy).toBe('Retain');
    const job = byDescription(s, 'Job analyse: ');
    expect(variables(job)).toMatchObject({
      ANALYSIS_PROVIDER: 'openai', ANALYSIS_BASE_URL: 'https://llm.example.com/v1', ANALYSIS_MODEL: 'gpt-4.1-mini',
      ANALYSIS_SECRET_ARN: { Ref: secret.logicalId },
    });
    const grants = readsSecrets(s, job);
    expect(grants).toHaveLength(1);
    expect(grants[0].Resource).toEqual({ Ref: secret.logicalId });
    const op = byDescription(s, 'GET /api/v1/other: ');
    expect(readsSecrets(s, op)).toEqual([]);
    expect(variables(op).ANALYSIS_SECRET_ARN).toBeUndefined();
    expect(nagErrors(s)).toEqual([]);
  });

  it('with openai and an existing secret by name, creates none and grants that one', () => {
    const s = build({ provider: 'openai', secretName: 'vap/analysis' });
    expect(analysisSecrets(s)).toEqual([]);
    const job = byDescription(s, 'Job analyse: ');
    expect(readsSecrets(s, job)).toHaveLength(1);
    expect(JSON.stringify(variables(job).ANALYSIS_SECRET_ARN)).toContain('secret:vap/analysis');
  });

  it('gives the analysis settings to no registry operation or job that does not declare them', () => {
    const s = synth({ analysis: { provider: 'openai' } });
    const declared = new Set([...operations, ...jobs].filter((d) => d.access.analysis).map((d) => ('operationId' in d ? `${d.method} ${d.path}: ` : `Job ${d.name}: `)));
    for (const fn of s.resources('AWS::Lambda::Function')) {
      const description = String(fn.Properties.Description);
      const declares = [...declared].some((prefix) => description.startsWith(prefix));
      expect([description, variables(fn)?.ANALYSIS_SECRET_ARN !== undefined]).toEqual([description, declares]);
    }
  });
});
