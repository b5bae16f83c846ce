import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { App } from 'aws-cdk-lib';
import { DEFAULT_STAGE, deploymentOf } from '../../lib/names';
import { VoiceAgentPlatformStack } from '../../lib/stack';
import { getAgent } from '../../shared/domain/agents/operations';
import { operations } from '../../shared/http/registry';
import { functionFor, synth } from './synth';

const cdkContext = JSON.parse(readFileSync(path.join(__dirname, '..', '..', 'cdk.json'), 'utf8')).context;
const context = (values: Record<string, string>) => (key: string) => values[key];
/** A region name anywhere in a template (us-east-1, eu-central-2, ap-southeast-4, …). */
const REGION = /\b(us|eu|ap|sa|ca|me|af|il|mx|cn|us-gov)-(north|south|east|west|central|northeast|southeast|northwest|southwest)-\d\b/;

describe('one deployment per stage, account and region', () => {
  it('names the stack after the stage: -c stage first, then STAGE, else dev', () => {
    expect(deploymentOf(context({}), {})).toEqual({ stage: DEFAULT_STAGE, stackName: 'VoiceAgentPlatform-dev' });
    expect(deploymentOf(context({}), { STAGE: 'qa' }).stackName).toBe('VoiceAgentPlatform-qa');
    expect(deploymentOf(context({ stage: 'prod' }), { STAGE: 'qa' }).stackName).toBe('VoiceAgentPlatform-prod');
    expect(() => deploymentOf(context({ stage: 'my stage' }), {})).toThrow(/Stage "my stage" must start with a letter/);
  });

  it("pins account and region only when asked, never from the CLI's profile defaults", () => {
    expect(deploymentOf(context({}), { CDK_DEFAULT_ACCOUNT: '111111111111', CDK_DEFAULT_REGION: 'eu-west-1' }).env).toBeUndefined();
    expect(deploymentOf(context({ region: 'eu-west-1' }), {}).env).toEqual({ region: 'eu-west-1' });
    expect(deploymentOf(context({}), { CDK_DEPLOY_ACCOUNT: '111111111111', CDK_DEPLOY_REGION: 'eu-west-1' }).env).toEqual({
      account: '111111111111',
      region: 'eu-west-1',
    });
  });

  it('synthesizes two stages into two distinct stacks of one app', () => {
    const app = new App({ context: { ...cdkContext, 'aws:cdk:bundling-stacks': [] }, builtinCloudFormationValidation: false });
    for (const stage of ['dev', 'prod']) {
      const deployment = deploymentOf(context({ stage }), {});
      new VoiceAgentPlatformStack(app, deployment.stackName, { env: deployment.env });
    }
    const names = app.synth().stacks.map((stack) => stack.stackName).filter((name) => name.startsWith('VoiceAgentPlatform-') && !name.includes('.'));
    expect(names.sort()).toEqual(['VoiceAgentPlatform-dev', 'VoiceAgentPlatform-prod']);
  });

  it('writes no region into any template when none is pinned', () => {
    const s = synth();
    expect(s.stack.region).toMatch(/^\$\{Token/);
    for (const [name, template] of s.templates) expect({ name, region: JSON.stringify(template.toJSON()).match(REGION)?.[0] }).toEqual({ name, region: undefined });
  });

  it("keeps a function's logical id and stack when its operation's tag or summary changes", () => {
    const before = functionFor(synth(), getAgent);
    const renamed = { ...getAgent, tag: 'Voice agents', summary: 'Fetch one voice agent' };
    const after = functionFor(synth({ operations: operations.map((op) => (op === getAgent ? renamed : op)) }), renamed);
    expect({ stack: after.stack, logicalId: after.logicalId }).toEqual({ stack: before.stack, logicalId: before.logicalId });
  });
});
