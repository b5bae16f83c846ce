import { readDeployDoc } from '../../stack/deploy-doc';
import { PRODUCTION_DEPLOY } from '../../stack/settings';
import { OPERATOR_SECRETS } from '../../stack/support';

/**
 * docs/operations.md's production deploy block is what the stack tier runs (issue 41): its
 * variables are the tier's synth settings, its secrets the ones the tier puts, and nothing else in
 * it goes unaccounted for.
 */
describe('the production deploy block of docs/operations.md', () => {
  it('is the stack tier\'s synth: Twilio, OpenAI-compatible models and the Realtime API, by the deploy table\'s variables', () => {
    expect(PRODUCTION_DEPLOY.env).toMatchObject({ TELEPHONY_PROVIDER: 'twilio', LLM_PROVIDER: 'openai', ANALYSIS_PROVIDER: 'openai' });
    expect(PRODUCTION_DEPLOY.env.PUBLIC_BASE_URL).toMatch(/^https:\/\//);
  });

  it('puts exactly the secrets the tier puts', () => {
    expect([...PRODUCTION_DEPLOY.secrets].sort()).toEqual(Object.keys(OPERATOR_SECRETS).sort());
  });

  it('has no other command than the one the runner stands in for (it starts the task after the secrets are put)', () => {
    expect(PRODUCTION_DEPLOY.others).toEqual(['aws ecs update-service --cluster <cluster> --service <service> --force-new-deployment']);
  });

  it('reads variables, context and continued lines, and refuses what it cannot read', () => {
    const doc = (block: string) => `x\n**This block is what CI runs** y\n\n\`\`\`bash\n${block}\n\`\`\`\n`;
    expect(readDeployDoc(doc('A=1 \\\n  B=two npx cdk deploy -c stage=prod   # note\naws secretsmanager put-secret-value --secret-id <LlmApiKey secret> --secret-string x'))).toEqual({
      env: { A: '1', B: 'two' },
      context: { stage: 'prod' },
      secrets: ['LlmApiKey'],
      others: [],
    });
    expect(() => readDeployDoc(doc('a=1 npx cdk deploy'))).toThrow(/"a=1" before cdk deploy is not VAR=value/);
    expect(() => readDeployDoc(doc('npx cdk deploy --all'))).toThrow(/argument "--all"/);
    expect(() => readDeployDoc('no block here')).toThrow(/This block is what CI runs/);
  });
});
